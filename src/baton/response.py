"""The rich answer: ``AIMessage`` and the values it carries.

One type travels from a specialist, through the orchestrator, to every surface (web page,
CLI, notebook, OpenAI-compatible endpoint). It holds seed 000's fields (content, data,
artifacts, images, code, source documents, ids) and seed 002's AgentResponse fields (query,
results, viz, response type, tool-call log, follow-ups, insights, staleness warning, ...).

One name per thing. ``source_documents`` are the cited sources (seed 002's
``knowledge_sources`` was the same list twice; JSON that has it still loads, merged in).
``results`` is the typed table the answer's query returned (columns, engine types,
truncation, timing): what follow-ups, export, charts and evaluation read. ``data`` is what
the page shows (seed 000's frontend contract): one dataset, or several keyed by agent or
stage; it is defined by ``results`` when a producer gives only the table (``data`` is then
``results.records()``), so a specialist sets the table once. Both stay because they differ
where it matters: a pipeline's or a synthesis's ``data`` holds every stage's or agent's rows,
its ``results`` the one table a follow-up builds on (or none).

Serialisation is one pydantic ``TypeAdapter`` over the dataclass (``to_dict``/``from_dict``):
typed fields (the table, sources, the response type, ``created_at``) are validated on read,
unknown fields refused. ``AIMessage`` stays a dataclass rather than a ``BaseModel``: it is
built and mutated field by field across the tree (``message.results = ...``), copied with
``dataclasses`` machinery and compared with ``==``; a model would change construction
(validation on every ``AIMessage(...)``), ``copy`` and equality for every producer for no
gain on the wire. Free-form values (rows, metadata, logs) keep the original tagged wire
format byte for byte: DataFrames, dates, datetimes, decimals, bytes and non-finite floats are
written as ``{"$type": ..., ...}`` objects (``baton.tagged_json``: each tag a pydantic model) and read back as the
same Python values, so answers stored by earlier versions (session history, durable
pipelines) still load.

``AnswerMetadata`` is the one typed definition of the metadata keys read across layers
(routing mode, agent errors, charts, memory lock, follow-up and fast-path kinds, ...);
``message.meta`` is the same dict seen through it, so a reader in another layer gets its key
names and types checked by mypy. ``metadata`` itself stays a free-form ``dict``: answers
carry agent-specific details no other layer reads (attempts, warnings, a user's own
specialist's keys) and stored answers have them, and the mypy in use has no open
``TypedDict`` (PEP 728 ``extra_items``): a closed one would refuse every such key and every
``**extra`` merge at each producer.

In a notebook an answer draws itself (``_repr_html_``) with the renderer registered under the
entry-point group ``baton.renderers`` as ``text/html`` (Baton's own is
``baton.viz.notebook:render_html``). The protocol layer never imports the presentation layer:
the renderer is looked up on first display, not at import. A renderer from another installed
package replaces Baton's (that is what registering one is for); where none is registered (a
source tree used without installing) the notebook shows the plain ``repr``.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, NotRequired, TypedDict, cast

from pydantic import TypeAdapter, ValidationError

from baton.answer_dict import dict_writer
from baton.ids import random_hex
from baton.tagged_json import TAGGED, AnswerFormatError, from_jsonable, to_jsonable

__all__ = [
    "AIMessage", "AgentError", "AnswerFormatError", "AnswerMetadata", "DataFreshness", "QueryResult", "ResponseType",
    "MODEL_NOT_CONFIGURED", "RAGSource", "SourceDocument", "from_jsonable", "html_renderer", "staleness_warning", "to_jsonable",
]

RENDERERS_GROUP = "baton.renderers"
# The code of the answer given because no language model is configured (the no-model reply,
# ``baton.agents.lexical_routing``, and a specialist's own): how every reader recognises it.
MODEL_NOT_CONFIGURED = "model_not_configured"


class ResponseType(StrEnum):
    """What kind of answer this is; surfaces pick their rendering from it."""

    TEXT = "text"
    SQL_RESULT = "sql_result"
    KNOWLEDGE = "knowledge"
    ERROR = "error"
    CLARIFICATION_REQUEST = "clarification_request"
    STAGE_CHECKPOINT = "stage_checkpoint"
    STAGE_FAILED = "stage_failed"
    PIPELINE_COMPLETE = "pipeline_complete"


@dataclass
class QueryResult:
    """Rows a query returned, with column names and (engine-reported) types.

    ``truncated`` is set when the row or byte cap cut the result; ``row_count`` is the number
    of rows kept.
    """

    columns: list[str] = field(default_factory=list)
    rows: Annotated[list[list[Any]], TAGGED] = field(default_factory=list)
    column_types: list[str] = field(default_factory=list)
    truncated: bool = False
    execution_ms: float = 0.0

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def records(self) -> list[dict[str, Any]]:
        """Rows as ``{column: value}`` dicts (the shape the page's table and charts use)."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_dataframe(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)


@dataclass
class SourceDocument:
    """A cited piece of knowledge: which file, which chunk, how well it matched."""

    source: str
    content: str = ""
    chunk_id: str | None = None
    score: Annotated[float | None, TAGGED] = None
    metadata: Annotated[dict[str, Any], TAGGED] = field(default_factory=dict)


RAGSource = SourceDocument  # seed 002's name for the same thing


class AgentError(TypedDict):
    """One specialist that failed in an orchestrated answer (``metadata["agent_errors"]``)."""

    agent: str
    error_type: str | None
    error: str | None
    error_code: NotRequired[str]


class DataFreshness(TypedDict):
    """When the data an answer read was last loaded (``metadata["data_freshness"]``; set
    where the database has a freshness setting, ``baton.specialists.sql.freshness``)."""

    loaded_at: str    # ISO 8601, UTC
    age_s: float      # the data's age when the answer was made
    max_age_s: float  # the workspace's freshness limit
    stale: bool       # age_s > max_age_s: the answer's staleness_warning says so


class AnswerMetadata(TypedDict, total=False):
    """The metadata keys read across layers, with their types (module docstring): the ones
    a surface, the orchestrator or the workspace relies on. Read them through
    ``AIMessage.meta``; other keys (agent-specific details) live beside them."""

    mode: str | None            # how the orchestrator answered: passthrough, synthesis, direct, pipeline, error
    orchestrated: bool
    routed_to: str              # the specialist that answered
    agent: str                  # the specialist that produced this message
    agents_consulted: list[str]
    agent_errors: list[AgentError]
    partial: bool
    charts: dict[str, Any]      # each dataset's chart in a synthesis, keyed like ``data``
    memory_lock: dict[str, Any] # what the memory held when the answer was made (``BundleLock.to_dict()``)
    stale_memory: list[str]     # the stale learnings the answer leaned on (``staleness_warning``)
    data_freshness: DataFreshness  # when the data the answer read was last loaded
    followup: str               # the kind of follow-up this answer is (top_n, rechart, ...)
    based_on: str               # the turn a follow-up was built on
    fast_path: str              # answered without the model: verified_question, edited_sql, ...
    llm_calls: int
    semantic_query: dict[str, Any]
    dialect: str | None
    connection_id: str
    did_you_mean: list[dict[str, Any]]
    title: str
    pipeline: dict[str, Any]
    stages: list[dict[str, Any]]
    error_code: str
    retry_after_s: float


def new_turn_id() -> str:
    """A new answer's ``turn_id`` (what ``AIMessage()`` gets): for a caller that needs only
    the id, without building a whole message for it."""
    return random_hex()


@dataclass
class AIMessage:
    """The one rich answer type. ``content`` is the text; everything else is optional.

    ``data`` is a list of row dicts (or a DataFrame) for one dataset, or a dict keyed by agent
    name when the orchestrator merged several specialists (seed 000 frontend contract); when
    only ``results`` is given it is ``results.records()`` (module docstring).
    """

    content: str = ""
    data: Annotated[Any, TAGGED] = None
    artifacts: Annotated[list[dict[str, Any]], TAGGED] = field(default_factory=list)
    images: Annotated[list[Any], TAGGED] = field(default_factory=list)
    code: str | None = None
    source_documents: list[SourceDocument] = field(default_factory=list)
    metadata: Annotated[dict[str, Any], TAGGED] = field(default_factory=dict)
    session_id: str | None = None
    turn_id: str = field(default_factory=new_turn_id)
    input: str | None = None
    # seed 002 AgentResponse
    query: str | None = None
    query_explanation: str | None = None
    results: QueryResult | None = None
    viz_type: str = "text"
    viz_config: Annotated[dict[str, Any], TAGGED] = field(default_factory=dict)
    error: str | None = None
    workflow_id: str | None = None
    token_usage: dict[str, int] = field(default_factory=dict)
    llm_provider: str = ""
    llm_model: str = ""
    response_type: ResponseType = ResponseType.TEXT
    tool_call_log: Annotated[list[dict[str, Any]], TAGGED] = field(default_factory=list)
    suggested_followups: list[str] = field(default_factory=list)
    insights: Annotated[list[dict[str, Any]], TAGGED] = field(default_factory=list)
    context_usage_pct: int = 0
    # set when the answer leaned on something that may be out of date (data older than the
    # database's freshness limit, a learning past its stale window); the page and CLI show it
    staleness_warning: str | None = None
    created_at: Annotated[dt.datetime, TAGGED] = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    # why the question was not (fully) answered: a typed code (``baton.agents.failures``), and
    # whether this answer is partial (some specialists failed; ``metadata["agent_errors"]``)
    error_code: str | None = None
    partial: bool = False

    def __post_init__(self) -> None:
        if self.data is None and self.results is not None:
            self.data = self.results.records()

    @classmethod
    def failed(cls, code: str, error: str, content: str | None = None, *, retry_after_s: float | None = None,
               response_type: ResponseType = ResponseType.ERROR, **fields: Any) -> AIMessage:
        """The one way to make an error answer: ``error_code`` ``code`` (``baton.agents.failures``),
        ``error`` the short reason, ``content`` what the person reads (the reason when not
        given). Every producer uses it, so no error answer is ever without a code."""
        message = cls(content=error if content is None else content, **fields)
        return message.fail(code, error, retry_after_s=retry_after_s, response_type=response_type)

    def fail(self, code: str, error: str, *, retry_after_s: float | None = None,
             response_type: ResponseType = ResponseType.ERROR) -> AIMessage:
        """Make this answer an error answer in place (``failed``'s work, for an answer that
        already holds what it keeps: a synthesis whose every specialist failed); returns it.
        ``response_type``: ``error``, or ``stage_failed`` for a pipeline's failed stage."""
        self.error, self.error_code, self.response_type = error, code, response_type
        if retry_after_s is not None:
            self.meta["retry_after_s"] = retry_after_s
        return self

    @property
    def output(self) -> str:
        """Seed 000's name for ``content``."""
        return self.content

    @property
    def meta(self) -> AnswerMetadata:
        """``metadata`` seen through ``AnswerMetadata`` (the same dict, not a copy): the
        cross-layer keys, typed (module docstring)."""
        return cast(AnswerMetadata, self.metadata)

    @property
    def has_rich_content(self) -> bool:
        """True when there is something beyond text to show (seed 000 pass-through rule)."""
        return bool(self.data is not None or self.artifacts or self.images or self.code)

    def copy(self, **changes: Any) -> AIMessage:
        """A deep copy with ``changes`` applied; the original is never touched.

        Immutable fields are shared; containers are copied (empty ones just recreated), and
        DataFrames use their own ``copy()``: several times cheaper than ``deepcopy`` of the
        whole message on the orchestrator's pass-through path.
        """
        return self._copied(_copy_value, changes)

    def shallow_copy(self, **changes: Any) -> AIMessage:
        """A copy with its own containers over the same contents (rows, chart specs, sources
        shared; a DataFrame a view) and ``changes`` applied: for the answer path, which
        re-stamps an answer but never edits a row or a spec in place, where deep-copying
        every row was a measurable share of a question's CPU."""
        return self._copied(_new_container, changes)

    def _copied(self, copy_value: Callable[[Any], Any], changes: dict[str, Any]) -> AIMessage:
        clone = copy.copy(self)
        for name in _CONTAINER_FIELDS:
            if name not in changes:
                setattr(clone, name, copy_value(getattr(self, name)))
        for key, value in changes.items():
            setattr(clone, key, value)
        return clone

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict (tagged values for DataFrames, dates, decimals, bytes): the
        adapter's, written in one plain pass where the fields hold their declared types
        (``baton.answer_dict``)."""
        out = _writer()(self)
        if out is None:
            out = _adapter().dump_python(self, mode="json")
        return out

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> AIMessage:
        raw = _renamed(raw)
        unknown = set(raw) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise AnswerFormatError(f"unknown AIMessage fields: {sorted(unknown)}")
        try:
            return _adapter().validate_python(raw)
        except ValidationError as exc:
            raise AnswerFormatError(f"unreadable AIMessage: {exc}") from exc

    @classmethod
    def from_json(cls, text: str) -> AIMessage:
        return cls.from_dict(json.loads(text))

    def _repr_html_(self) -> str | None:  # notebooks (module docstring)
        render = html_renderer()
        return None if render is None else render(self)


def staleness_warning(stale: list[str]) -> str | None:
    """The line an answer shows when it leaned on memory past its stale window (``stale``:
    one description each, ``MemoryBundle.stale``); None when nothing was stale."""
    if not stale:
        return None
    return "May be out of date: it relied on " + "; ".join(stale)


@functools.cache
def html_renderer() -> Callable[[AIMessage], str] | None:
    """The registered ``text/html`` renderer (module docstring), loaded once."""
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=RENDERERS_GROUP, name="text/html"),
                   key=lambda ep: (ep.dist is not None and ep.dist.name == "baton", ep.value))
    return found[0].load() if found else None


@functools.cache
def _adapter() -> TypeAdapter[AIMessage]:
    """Built on first use, not at import."""
    return TypeAdapter(AIMessage)


@functools.cache
def _writer() -> Callable[[AIMessage], dict[str, Any] | None]:
    """``to_dict``'s one-pass writer (``baton.answer_dict``), built on first use."""
    return dict_writer(AIMessage, QueryResult, SourceDocument, ResponseType)


def _renamed(raw: dict[str, Any]) -> dict[str, Any]:
    """Old field names mapped to today's: ``knowledge_sources`` (seed 002's second list of the
    same sources) joins ``source_documents``, each source once."""
    if "knowledge_sources" not in raw:
        return raw
    raw = dict(raw)
    extra = raw.pop("knowledge_sources") or []
    kept = list(raw.get("source_documents") or [])
    raw["source_documents"] = kept + [doc for doc in extra if doc not in kept]
    return raw


_CONTAINER_FIELDS = (
    "data", "artifacts", "images", "source_documents", "metadata", "results", "viz_config",
    "token_usage", "tool_call_log", "suggested_followups", "insights",
)


def _new_container(value: Any) -> Any:
    """A new list, dict or DataFrame view over ``value``'s contents; anything else as it is."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    if hasattr(value, "dtypes") and hasattr(value, "copy"):  # a pandas DataFrame
        return value.copy(deep=False)
    return value


def _copy_value(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, dict)) and not value:
        return type(value)()
    if hasattr(value, "dtypes") and hasattr(value, "copy"):  # a pandas DataFrame
        return value.copy(deep=True)
    return copy.deepcopy(value)
