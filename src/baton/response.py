"""The rich answer: ``AIMessage`` and the values it carries.

One type travels from a specialist, through the orchestrator, to every surface (web page,
CLI, notebook, OpenAI-compatible endpoint). It holds seed 000's fields (content, data,
artifacts, images, code, source documents, ids) and seed 002's AgentResponse fields (query,
results, viz, knowledge sources, response type, tool-call log, follow-ups, insights, ...).

``to_json``/``from_json`` round-trip it exactly: DataFrames, dates, datetimes, decimals and
bytes are written as tagged objects (``{"$type": "dataframe", ...}``) and read back as the
same Python values.

In a notebook an answer draws itself (``_repr_html_``) with the renderer registered under the
entry-point group ``baton.renderers`` as ``text/html`` (Baton's own is
``baton.viz.notebook:render_html``). The protocol layer never imports the presentation layer:
the renderer is looked up on first display, not at import. A renderer from another installed
package replaces Baton's (that is what registering one is for); where none is registered (a
source tree used without installing) the notebook shows the plain ``repr``.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import datetime as dt
import functools
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

from baton.errors import BatonError

RENDERERS_GROUP = "baton.renderers"


class AnswerFormatError(BatonError, ValueError):
    """A serialized answer that does not read back (unknown fields or tags)."""


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
    rows: list[list[Any]] = field(default_factory=list)
    column_types: list[str] = field(default_factory=list)
    truncated: bool = False
    execution_ms: float = 0.0

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def records(self) -> list[dict[str, Any]]:
        """Rows as ``{column: value}`` dicts (the shape the page's table and charts use)."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_dataframe(self):
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)


@dataclass
class SourceDocument:
    """A cited piece of knowledge: which file, which chunk, how well it matched."""

    source: str
    content: str = ""
    chunk_id: str | None = None
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


RAGSource = SourceDocument  # seed 002's name for the same thing


@dataclass
class AIMessage:
    """The one rich answer type. ``content`` is the text; everything else is optional.

    ``data`` is a list of row dicts (or a DataFrame) for one dataset, or a dict keyed by agent
    name when the orchestrator merged several specialists (seed 000 frontend contract).
    """

    content: str = ""
    data: Any = None
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    images: list[Any] = field(default_factory=list)
    code: str | None = None
    source_documents: list[SourceDocument] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    turn_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    input: str | None = None
    # seed 002 AgentResponse
    query: str | None = None
    query_explanation: str | None = None
    results: QueryResult | None = None
    viz_type: str = "text"
    viz_config: dict[str, Any] = field(default_factory=dict)
    knowledge_sources: list[SourceDocument] = field(default_factory=list)
    error: str | None = None
    workflow_id: str | None = None
    token_usage: dict[str, int] = field(default_factory=dict)
    llm_provider: str = ""
    llm_model: str = ""
    response_type: ResponseType = ResponseType.TEXT
    tool_call_log: list[dict[str, Any]] = field(default_factory=list)
    suggested_followups: list[str] = field(default_factory=list)
    insights: list[dict[str, Any]] = field(default_factory=list)
    context_usage_pct: int = 0
    staleness_warning: str | None = None
    created_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    # why the question was not (fully) answered: a typed code (``baton.agents.failures``), and
    # whether this answer is partial (some specialists failed; ``metadata["agent_errors"]``)
    error_code: str | None = None
    partial: bool = False

    @property
    def output(self) -> str:
        """Seed 000's name for ``content``."""
        return self.content

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
        clone = copy.copy(self)
        for name in _CONTAINER_FIELDS:
            if name not in changes:
                setattr(clone, name, _copy_value(getattr(self, name)))
        for key, value in changes.items():
            setattr(clone, key, value)
        return clone

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict (tagged values for DataFrames, dates, decimals, bytes)."""
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> AIMessage:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(raw) - known
        if unknown:
            raise AnswerFormatError(f"unknown AIMessage fields: {sorted(unknown)}")
        values = {k: from_jsonable(v) for k, v in raw.items()}
        if values.get("results") is not None:
            values["results"] = QueryResult(**values["results"])
        for key in ("source_documents", "knowledge_sources"):
            if key in values:
                values[key] = [SourceDocument(**d) for d in values[key]]
        if "response_type" in values:
            values["response_type"] = ResponseType(values["response_type"])
        return cls(**values)

    @classmethod
    def from_json(cls, text: str) -> AIMessage:
        return cls.from_dict(json.loads(text))

    def _repr_html_(self) -> str | None:  # notebooks (module docstring)
        render = html_renderer()
        return None if render is None else render(self)


@functools.cache
def html_renderer() -> Callable[[AIMessage], str] | None:
    """The registered ``text/html`` renderer (module docstring), loaded once."""
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=RENDERERS_GROUP, name="text/html"),
                   key=lambda ep: (ep.dist is not None and ep.dist.name == "baton", ep.value))
    return found[0].load() if found else None


_CONTAINER_FIELDS = (
    "data", "artifacts", "images", "source_documents", "metadata", "results", "viz_config",
    "knowledge_sources", "token_usage", "tool_call_log", "suggested_followups", "insights",
)


def _copy_value(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, dict)) and not value:
        return type(value)()
    if hasattr(value, "dtypes") and hasattr(value, "copy"):  # a pandas DataFrame
        return value.copy(deep=True)
    return copy.deepcopy(value)


# --- tagged JSON values ---------------------------------------------------------------------

_TAG = "$type"


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` to JSON-compatible data, tagging types JSON cannot hold."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else {_TAG: "float", "value": repr(value)}
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, dict):
        converted = {str(k): to_jsonable(v) for k, v in value.items()}
        # A user's own dict with a "$type" key (JSON columns, .NET payloads) must not be read
        # back as one of our tags: wrap it.
        return {_TAG: "dict", "value": converted} if _TAG in converted else converted
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dt.datetime):
        return {_TAG: "datetime", "value": value.isoformat()}
    if isinstance(value, dt.date):
        return {_TAG: "date", "value": value.isoformat()}
    if isinstance(value, dt.time):
        return {_TAG: "time", "value": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {_TAG: "timedelta", "value": value.total_seconds()}
    if isinstance(value, Decimal):
        return {_TAG: "decimal", "value": str(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {_TAG: "bytes", "value": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, uuid.UUID):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "dtypes") and hasattr(value, "itertuples"):  # a pandas DataFrame
        return _dataframe_to_json(value)
    if hasattr(value, "item") and hasattr(value, "dtype"):  # numpy / pandas scalars
        return to_jsonable(value.item())
    # Anything else a database driver hands back (IP addresses, ranges, intervals, geometry,
    # ...) is kept as its text form rather than losing the whole answer.
    return str(value)


def _dataframe_to_json(frame) -> dict[str, Any]:
    return {
        _TAG: "dataframe",
        "columns": [str(c) for c in frame.columns],
        "dtypes": [str(t) for t in frame.dtypes],
        "rows": [[to_jsonable(v) for v in row] for row in frame.itertuples(index=False, name=None)],
    }


def from_jsonable(value: Any) -> Any:
    """Inverse of :func:`to_jsonable`."""
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    if not isinstance(value, dict):
        return value
    tag = value.get(_TAG)
    if tag is None:
        return {k: from_jsonable(v) for k, v in value.items()}
    raw = value.get("value")
    if tag == "dict":
        return {k: from_jsonable(v) for k, v in raw.items()}
    if tag == "datetime":
        return dt.datetime.fromisoformat(raw)
    if tag == "date":
        return dt.date.fromisoformat(raw)
    if tag == "time":
        return dt.time.fromisoformat(raw)
    if tag == "timedelta":
        return dt.timedelta(seconds=raw)
    if tag == "decimal":
        return Decimal(raw)
    if tag == "bytes":
        return base64.b64decode(raw)
    if tag == "float":
        return float(raw)
    if tag == "dataframe":
        import pandas as pd

        rows = [[from_jsonable(v) for v in row] for row in value["rows"]]
        frame = pd.DataFrame(rows, columns=value["columns"])
        for column, dtype in zip(value["columns"], value["dtypes"]):
            if dtype != "object" and dtype != str(frame[column].dtype):
                try:
                    frame[column] = frame[column].astype(dtype)
                except (TypeError, ValueError):
                    pass
        return frame
    raise AnswerFormatError(f"unknown tagged JSON value {tag!r}")
