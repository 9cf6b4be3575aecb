"""``Workspace``: everything one workspace needs at run time, and the one answer path.

A workspace owns its SQL connections, its memory, its knowledge indexes, its conversations
(``SessionStore``), its pipelines, its tracker and its chart renderer. It is an async
context manager: ``async with workspace:`` closes all of it on the way out, and
``aclose()`` does the same by hand (twice is harmless). Builders (``open_database_workspace``,
the demo's ``build_demo_workspace``) hand over what they opened with ``own(...)``, so
whoever closes the workspace closes exactly what was opened for it.

``answer(...)`` / ``answer_stream(...)`` are the one way to ask (see ``answer.py``): every
surface — the HTTP JSON and SSE endpoints, the OpenAI-compatible endpoint, the CLI, a
notebook — adapts them and none answers on its own.

Decisions written down here (the issue was silent):
- The workspace closes what it was given, including a ``SessionStore`` or ``MemoryStore``
  passed to its constructor: ownership passes with the object.
- The workspace's ``tracker`` receives every event of every request (observability); a
  request may add its own tracker (an SSE stream), and both receive the events. A tracker
  is shut down on close only when the workspace was told it owns it (``owns_tracker``),
  since one process-wide exporter may serve several workspaces.
- Its stores' blocking I/O runs on bulkheads of its own (``baton.state.bulkheads``: memory reads,
  advisory writes, knowledge; conversations have theirs in the ``SessionStore``), and
  every question has a deadline (``deadline_s``; None: ``BATON_QUESTION_DEADLINE``, 120 s).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.events import NULL_TRACKER, Event, FanOutTracker, WorkflowTracker
from baton.response import AIMessage
from baton.state.bulkheads import Bulkheads
from baton.state.sessions import SessionStore
from baton.workspace.catalog import Catalog
from baton.workspace.charts import ChartRenderer
from baton.workspace.pipelines import as_service

if TYPE_CHECKING:
    from baton.agents.orchestrator import OrchestratorAgent
    from baton.llm.base import ChatModel
    from baton.memory import WorkspaceScope
    from baton.messages import Message
    from baton.phrasing import Vocabulary
    from baton.semantic.layer import SemanticLayer

log = logging.getLogger(__name__)


class Workspace:
    """One workspace: its orchestrator and everything it answers with (module docstring)."""

    def __init__(
        self,
        name: str,
        orchestrator: OrchestratorAgent,
        sessions: SessionStore | None = None,
        *,
        memory: Any = None,
        pipelines: Any = None,
        description: str = "",
        tracker: WorkflowTracker | None = None,
        owns_tracker: bool = False,
        charts: ChartRenderer | None = None,
        model: ChatModel | None = None,
        directory: Path | None = None,
    ) -> None:
        self.name = name
        self.orchestrator = orchestrator
        self.sessions = sessions if sessions is not None else SessionStore()
        self.memory = memory  # this workspace's baton.memory.MemoryStore, when configured
        self.pipelines = as_service(pipelines)  # the pipeline service (start, decide, list, events), when configured
        self.description = description
        self.tracker: WorkflowTracker = tracker or NULL_TRACKER
        self.charts = charts if charts is not None else ChartRenderer()
        self.model = model
        self.directory = directory
        self.bulkheads = Bulkheads(name)
        self.deadline_s: float | None = None  # per-question deadline (None: the process's, baton.llm.policy)
        self.hardened = False  # memory ports and document indexes put behind the bulkheads (advisory.harden)
        self.catalog = Catalog(orchestrator)  # its specialists, databases, semantic layer, verified questions (catalog.py)
        self._owns_tracker = owns_tracker and tracker is not None
        self._closers: list[Callable[[], Any]] = []
        self._closed = False

    # --- lifecycle ------------------------------------------------------------------------

    def own(self, closer: Any) -> Any:
        """Close ``closer`` with the workspace: an object with ``aclose()`` or ``close()``
        (sync or async), or a callable. Closed in reverse order of ``own``; returns it."""
        self._closers.append(closer)
        return closer

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def no_model(self) -> bool:
        return self.model is None

    # --- parts kept in the catalog (set by whoever assembles the workspace) ---------------

    @property
    def semantic(self) -> SemanticLayer | None:
        """The semantic layer (``catalog.semantic``)."""
        return self.catalog.semantic

    @semantic.setter
    def semantic(self, layer: SemanticLayer | None) -> None:
        self.catalog.semantic = layer

    @property
    def vocabulary(self) -> Vocabulary | None:
        """How questions are read (``catalog.vocabulary``)."""
        return self.catalog.vocabulary

    @vocabulary.setter
    def vocabulary(self, vocabulary: Vocabulary | None) -> None:
        self.catalog.vocabulary = vocabulary

    @property
    def document_examples(self) -> tuple[str, ...]:
        """Questions its documents answer, when named (``catalog.document_examples``)."""
        return self.catalog.document_examples

    @document_examples.setter
    def document_examples(self, questions: Any) -> None:
        self.catalog.document_examples = tuple(questions or ())

    async def start(self) -> Workspace:
        """Start what runs in the background (durable pipelines: this process's part),
        on the running loop. Entering ``async with`` starts; so does first use."""
        from baton.workspace.advisory import harden

        harden(self)
        ensure = getattr(getattr(self.pipelines, "host", None), "ensure_started", None)
        if ensure is not None:
            await ensure()
        return self

    async def __aenter__(self) -> Workspace:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release everything: pipelines first (no run may start a stage on a closed
        connection), then what builders handed over, then memory, sessions, charts and the
        tracker. A closer that fails is logged and the others still run."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.bulkheads.drain()  # advisory writes still queued: a moment to land, then dropped
        except Exception:
            log.warning("draining advisory writes of workspace %s failed", self.name, exc_info=True)
        closers: list[Any] = [self.pipelines, *reversed(self._closers), self.bulkheads, self.memory, self.sessions, self.charts]
        if self._owns_tracker:
            closers.append(getattr(self.tracker, "shutdown", None))
        for closer in closers:
            if closer is None:
                continue
            try:
                await _close(closer)
            except Exception:
                log.warning("closing part of workspace %s failed", self.name, exc_info=True)

    # --- the answer path --------------------------------------------------------------------

    def request_tracker(self, tracker: WorkflowTracker | None) -> WorkflowTracker | None:
        """The tracker a request's events go to: the workspace's and the request's own."""
        mine = None if self.tracker is NULL_TRACKER else self.tracker
        if tracker is None or tracker is NULL_TRACKER:
            return mine
        return tracker if mine is None else FanOutTracker(mine, tracker)

    async def answer(self, question: str, session_id: str | None = None, *, history: list[Message] | None = None,
                     tracker: WorkflowTracker | None = None, **context_fields: Any) -> AIMessage:
        """Answer ``question`` in a new conversation or in ``session_id``'s (``answer.py``)."""
        from baton.workspace.answer import answer

        return await answer(self, question, session_id, history=history, tracker=tracker, **context_fields)

    def answer_stream(self, question: str, session_id: str | None = None, *, history: list[Message] | None = None,
                      tracker: WorkflowTracker | None = None, **context_fields: Any) -> AsyncIterator[Event | AIMessage]:
        """Every event as it happens, then the answer (already persisted)."""
        from baton.workspace.answer import answer_stream

        return answer_stream(self, question, session_id, history=history, tracker=tracker, **context_fields)

    async def decide(self, workflow_id: str, decision: Any, *, session_id: str | None = None,
                     tracker: WorkflowTracker | None = None, wait: bool = True) -> AIMessage | None:
        """Answer a pipeline's checkpoint (``baton.pipeline.CheckpointDecision``); with
        ``wait``, the run's next outcome, recorded as a turn of ``session_id`` when given
        (``SessionNotFound`` before anything moves for a session of another workspace).
        ``PipelineNotFound`` for a run of another workspace or one not paused."""
        from baton.agents import AgentContext
        from baton.events import NULL_TRACKER

        if session_id is not None and not await self.sessions.exists(self.name, session_id):
            from baton.state.conversations import SessionNotFound

            raise SessionNotFound(session_id)
        if self.pipelines is None:
            from baton.workspace.pipelines import PipelineNotFound

            raise PipelineNotFound(workflow_id)
        context = AgentContext(workspace=self.name, tracker=self.request_tracker(tracker) or NULL_TRACKER)
        message: AIMessage | None = await self.pipelines.decide(workflow_id, decision, context=context, wait=wait)
        if message is not None:
            message.workflow_id = message.workflow_id or workflow_id
            if session_id is not None:
                from baton.workspace.answer import record_turn

                label = f"[{decision.action}] {decision.question or ''}".strip()
                message = await record_turn(self, session_id, label, message)  # stored, remembered and logged as any answer
        return message

    async def feedback(self, turn_id: str, *, thumbs: str | None = None, verdict: str | None = None,
                       comment: str | None = None) -> dict[str, Any]:
        """Thumbs and data verdicts on one answer (``feedback.py``)."""
        from baton.workspace.feedback import give_feedback

        return await give_feedback(self, turn_id, thumbs=thumbs, verdict=verdict, comment=comment)

    def memory_scope(self) -> WorkspaceScope:
        """The memory scope of this workspace: opened for the workspace the caller's key
        maps to (the store trusts the server's authentication), never a name from a request."""
        from baton.memory import Principal

        scope: WorkspaceScope = self.memory.open(Principal(self.name))
        return scope

    def __repr__(self) -> str:
        return f"Workspace({self.name!r}, orchestrator={self.orchestrator.name!r})"


async def _close(closer: Any) -> None:
    for attribute in ("aclose", "close", "shutdown"):
        method = getattr(closer, attribute, None)
        if callable(method):
            break
    else:
        method = closer if callable(closer) else None
    if method is None:
        return
    result = method()
    if inspect.isawaitable(result):
        await result


class Workspaces:
    """The workspaces one process serves, by name."""

    def __init__(self, workspaces: list[Workspace] | None = None) -> None:
        self._by_name = {w.name: w for w in workspaces or ()}

    def add(self, workspace: Workspace) -> None:
        self._by_name[workspace.name] = workspace

    def get(self, name: str) -> Workspace:
        return self._by_name[name]

    def for_principal(self, principal: Any) -> Workspace:
        return self._by_name[principal.workspace]

    def names(self) -> set[str]:
        return set(self._by_name)

    def __iter__(self) -> Iterator[Workspace]:
        return iter(list(self._by_name.values()))

    def __len__(self) -> int:
        return len(self._by_name)

    async def aclose(self) -> None:
        await asyncio.gather(*(w.aclose() for w in self))

    async def __aenter__(self) -> Workspaces:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
