"""Memory in and out of a running workspace: the one entry point the agents use.

- ``SQLMemory`` implements the SQL specialist's ``MemoryPort``: the per-task bundle goes in
  (``compile_bundle``, returned as a ``MemoryBundle`` whose lock lets the answer record
  exactly what the agent knew), extracted learnings come out (``ingest_learnings``,
  provenance ``validation`` with the request as the observed outcome).
- ``remember_insights`` stores a data answer's insights with the insight lifecycle: a new
  one is created at its initial confidence; one found again is *resurfaced* (+0.05), never
  re-created (``MemoryStore.remember_insight``: the lookup and the write are one write
  transaction, so two concurrent requests with the same insight make one record, then
  resurface it); ``dismiss_insight`` applies the user's dismissal (-0.2).

The memory API is synchronous (SQLAlchemy); every call here runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from baton.memory.access import WorkspaceScope
from baton.memory.bundle import compile_bundle
from baton.memory.model import Provenance, RecordDraft
from baton.memory.store import MemoryStore
from baton.memory.validation import DEEP_ANALYSIS_AFTER_ATTEMPTS, ingest_learnings, record_validation
from baton.specialists.sql.memory_port import MemoryBundle

if TYPE_CHECKING:
    from baton.llm.base import ChatModel
    from baton.specialists.sql.learnings import ExtractedLearning

INSIGHT_ENTITY = "insight:"


class SQLMemory:
    """A workspace's memory as the SQL specialist sees it."""

    def __init__(self, store: MemoryStore, scope: WorkspaceScope, *, agent: str = "sql", token_budget: int = 1500) -> None:
        self.store = store
        self.scope = scope
        self.agent = agent
        self.token_budget = token_budget

    async def bundle_for(self, question: str, connection_id: str) -> MemoryBundle:
        return await asyncio.to_thread(self.bundle_now, question, connection_id)

    def bundle_now(self, question: str, connection_id: str) -> MemoryBundle:
        """The bundle, compiled on the calling thread (the database calls block)."""
        bundle = compile_bundle(self.scope, question, connection_id=connection_id, token_budget=self.token_budget)
        return MemoryBundle(bundle.text, bundle.lock.to_dict(), bundle.stale, bundle.tables)

    def provenance(self) -> Provenance:
        """The provenance of what one validation cycle records (a fresh outcome id each)."""
        return Provenance("validation", agent=self.agent, outcome_id=f"validation:{uuid.uuid4().hex}")

    def ingest_now(self, learnings: list[ExtractedLearning]) -> None:
        """Store ``learnings`` on the calling thread (the database calls block)."""
        ingest_learnings(self.scope, learnings, provenance=self.provenance())

    async def record_learnings(self, learnings: list[ExtractedLearning]) -> None:
        await asyncio.to_thread(self.ingest_now, learnings)

    async def record_validation(self, *, question: str, connection_id: str, learnings: list[ExtractedLearning],
                                attempts: list[dict[str, Any]], model: ChatModel | None = None) -> None:
        """The validation cycle: heuristic learnings always; the deep LLM analysis only past
        3 attempts and outside its cooldown (``baton.memory.validation.record_validation``,
        which runs its database calls in worker threads too)."""
        if len(attempts) <= DEEP_ANALYSIS_AFTER_ATTEMPTS or model is None:
            if learnings:
                await self.record_learnings(learnings)
            return
        await record_validation(self.scope, learnings=learnings, attempts=attempts, provenance=self.provenance(),
                                connection_id=connection_id, question=question, model=model)


def _insight_text(insight: dict[str, Any]) -> str:
    return str(insight.get("text") or insight.get("title") or insight.get("kind") or "insight")


def remember_insights(store: MemoryStore, scope: WorkspaceScope, insights: Iterable[dict[str, Any]], *,
                      session_id: str | None = None) -> list[str]:
    """Store (or resurface) each insight; returns the memory record ids, in order."""
    ids = []
    for insight in insights:
        entity = INSIGHT_ENTITY + str(insight.get("id") or _insight_text(insight))
        draft = RecordDraft("insight", _insight_text(insight), entity=entity, attribute=str(insight.get("kind") or "finding"),
                            value=str(insight.get("value", "")) or None, category="insight",
                            provenance=Provenance("insights", session_id=session_id, agent="insights"),
                            data={"insight": {k: v for k, v in insight.items() if k != "evidence_rows"}})
        ids.append(store.remember_insight(scope, draft).record.id)  # lookup + create/resurface: one transaction
    return ids


def dismiss_insight(store: MemoryStore, scope: WorkspaceScope, insight_id: str) -> bool:
    """The user dismissed it: -0.2 (and out of default retrieval when it falls below 0.15)."""
    known = store.about(scope, "insight", INSIGHT_ENTITY + insight_id)
    if not known:
        return False
    store.adjust_insight(scope, known[0].id, "dismissed")
    return True
