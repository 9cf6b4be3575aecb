"""Memory as advice: what an answer reads from memory and writes back never makes it wait
for a slow or dead memory store.

``harden(ws)`` puts each specialist's memory port (``baton.memory.bridge.SQLMemory``)
behind the workspace's bulkheads (``baton.state.bulkheads``):

- the per-task bundle (read before the SQL specialist's first model call) comes from the
  ``memory`` bulkhead within ``BUNDLE_TIMEOUT_S``; when memory is slow, down or busy the
  specialist answers without it (an empty bundle whose lock says ``memory: unavailable``,
  kept in the answer's ``metadata["memory_lock"]``; the outage is logged by the bulkhead,
  once per interval, not once per question);
- learnings (``record_learnings``) go to the ``insights`` bulkhead as advisory writes: queued
  (a bounded queue shed by policy, ``baton.state.advisory_queue``), never awaited by the answer,
  refused at once while memory is down; each counted (stored, shed, failed) and an outage
  logged once per interval;
- the deep validation analysis (a model call, then writes) runs as a background task, at
  most ``MAX_DEEP_ANALYSES`` at a time (more are shed, counted like the writes).

``remember_insights`` of an answer (``answer.py``) goes through the same advisory path, and
a document index's reads and writes run on the ``knowledge`` bulkhead.

Decision (the issue was silent): a workspace closing waits at most two seconds for advisory
writes still queued; the rest are dropped and counted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from baton.memory.bridge import SQLMemory
from baton.memory.bridge import remember_insights as remember_memory_insights
from baton.memory.bundle import compile_bundle
from baton.memory.validation import DEEP_ANALYSIS_AFTER_ATTEMPTS
from baton.specialists.knowledge.agent import KnowledgeAgent
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.memory_port import MemoryBundle
from baton.state.bulkheads import DependencyUnavailable

if TYPE_CHECKING:
    from baton.llm.base import ChatModel
    from baton.specialists.sql.learnings import ExtractedLearning
    from baton.state.bulkheads import Bulkheads
    from baton.workspace.core import Workspace

log = logging.getLogger("baton.workspace.advisory")

BUNDLE_TIMEOUT_S = 2.0
MAX_DEEP_ANALYSES = 2


class AdvisoryMemory:
    """A ``MemoryPort`` over ``SQLMemory`` whose reads are bounded and whose writes are advice."""

    def __init__(self, inner: SQLMemory, bulkheads: Bulkheads) -> None:
        self.inner = inner
        self.bulkheads = bulkheads
        self._deep: set[asyncio.Future[None]] = set()

    async def bundle_for(self, question: str, connection_id: str) -> MemoryBundle:
        inner = self.inner
        try:
            bundle = await self.bulkheads.memory.run(_call, compile_bundle, (inner.scope, question),
                                                     {"connection_id": connection_id, "token_budget": inner.token_budget},
                                                     timeout=BUNDLE_TIMEOUT_S)
        except DependencyUnavailable as exc:  # answer without memory; the bulkhead logs the outage (rate-limited)
            return MemoryBundle("", {"memory": "unavailable", "reason": exc.reason})
        return MemoryBundle(bundle.text, bundle.lock.to_dict(), bundle.stale, bundle.tables)

    async def record_learnings(self, learnings: list[ExtractedLearning]) -> None:
        if learnings:
            self.bulkheads.insights.advise(_call, self.inner.ingest_now, (learnings,), {}, kind="learning")

    async def record_validation(self, *, question: str, connection_id: str, learnings: list[ExtractedLearning],
                                attempts: list[dict[str, Any]], model: ChatModel | None = None) -> None:
        if len(attempts) <= DEEP_ANALYSIS_AFTER_ATTEMPTS or model is None:
            await self.record_learnings(learnings)
            return
        if len(self._deep) >= MAX_DEEP_ANALYSES or self.bulkheads.insights.state()["state"] == "down":
            self.bulkheads.insights.advisory.account("shed")
            self.bulkheads.insights.count_drop()
            return
        task = asyncio.ensure_future(self._analyse(question, connection_id, learnings, attempts, model))
        self._deep.add(task)
        task.add_done_callback(self._deep.discard)

    async def _analyse(self, question: str, connection_id: str, learnings: list[ExtractedLearning],
                       attempts: list[dict[str, Any]], model: ChatModel) -> None:
        try:
            await self.inner.record_validation(question=question, connection_id=connection_id, learnings=learnings,
                                               attempts=attempts, model=model)
        except Exception as exc:  # advice: counted and logged by the bulkhead, never raised
            self.bulkheads.insights.advisory.account("failed")
            self.bulkheads.insights.count_failure(type(exc).__name__)
            self.bulkheads.insights.count_drop()
        else:
            self.bulkheads.insights.advisory.account("stored")

    async def drain(self, timeout: float) -> None:
        if self._deep:
            await asyncio.wait(list(self._deep), timeout=timeout)


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)


def harden(ws: Workspace) -> None:
    """Put the memory ports of ``ws``'s specialists behind its bulkheads, and its document
    indexes on its knowledge bulkhead (once per workspace)."""
    if ws.hardened:
        return
    ws.hardened = True
    for specialist in ws.catalog.specialists():
        agent = specialist.agent
        if isinstance(agent, SQLAgent) and isinstance(agent.memory, SQLMemory):
            agent.memory = AdvisoryMemory(agent.memory, ws.bulkheads)
        elif isinstance(agent, KnowledgeAgent):
            agent.index.run_blocking_on(ws.bulkheads.knowledge.run)


def remember_insights(ws: Workspace, insights: list[dict[str, Any]], session_id: str) -> bool:
    """The answer's insights to memory as an advisory write; False when dropped."""
    if ws.memory is None or not insights:
        return True
    try:
        scope = ws.memory_scope()
    except Exception:
        ws.bulkheads.insights.advisory.fail()
        ws.bulkheads.insights.count_drop()
        return False
    return ws.bulkheads.insights.advise(_call, remember_memory_insights, (ws.memory, scope, insights), {"session_id": session_id},
                                        kind="insight")


async def count_use(ws: Workspace, record_id: str) -> None:
    """A verified question's use (``times_applied`` +1) as an advisory write of the lowest
    value (shed first); returns when it was stored, shed or failed (all counted), never raises."""
    if ws.memory is None:
        return
    try:
        scope = ws.memory_scope()
    except Exception:
        ws.bulkheads.insights.advisory.fail()
        ws.bulkheads.insights.count_drop()
        return
    future = ws.bulkheads.insights.advice(_call, ws.memory.mark_applied, (scope, [record_id]), {}, kind="usage")
    if future is not None:
        outcome = asyncio.wrap_future(future)
        await asyncio.wait([outcome])
        if not outcome.cancelled():
            outcome.exception()  # read, so asyncio logs no "never retrieved": the bulkhead counted it


async def read_memory(ws: Workspace, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """A memory call on the workspace's memory bulkhead (the memory API routes);
    ``DependencyUnavailable`` when memory is slow or down."""
    return await ws.bulkheads.memory.run(_call, fn, args, kwargs)


__all__ = ["AdvisoryMemory", "DependencyUnavailable", "count_use", "harden", "read_memory", "remember_insights"]
