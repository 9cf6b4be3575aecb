"""Memory in and out of a running workspace: the one entry point the agents use.

- ``SQLMemory`` implements the SQL specialist's ``MemoryPort``: the per-task bundle goes in
  (``compile_bundle``; its lock rides along on the returned text as ``.lock`` so the answer
  can record exactly what the agent knew), extracted learnings come out (``ingest_learnings``,
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
from typing import Any, Iterable

from baton.memory.access import WorkspaceScope
from baton.memory.bundle import compile_bundle
from baton.memory.model import Provenance, RecordDraft
from baton.memory.store import MemoryStore
from baton.memory.validation import DEEP_ANALYSIS_AFTER_ATTEMPTS, ingest_learnings, record_validation

INSIGHT_ENTITY = "insight:"


class BundleText(str):
    """The bundle's text, carrying its lock (journal sequence, record ids and hashes)."""

    lock: dict[str, Any]


class SQLMemory:
    """A workspace's memory as the SQL specialist sees it."""

    def __init__(self, store: MemoryStore, scope: WorkspaceScope, *, agent: str = "sql", token_budget: int = 1500) -> None:
        self.store = store
        self.scope = scope
        self.agent = agent
        self.token_budget = token_budget

    async def bundle_for(self, question: str, connection_id: str) -> str:
        bundle = await asyncio.to_thread(compile_bundle, self.scope, question, connection_id=connection_id,
                                         token_budget=self.token_budget)
        text = BundleText(bundle.text)
        text.lock = bundle.lock.to_dict()
        return text

    def _provenance(self) -> Provenance:
        return Provenance("validation", agent=self.agent, outcome_id=f"validation:{uuid.uuid4().hex}")

    async def record_learnings(self, learnings: list[Any]) -> None:
        await asyncio.to_thread(ingest_learnings, self.scope, learnings, provenance=self._provenance())

    async def record_validation(self, *, question: str, connection_id: str, learnings: list[Any],
                                attempts: list[dict[str, Any]], model: Any = None) -> None:
        """The validation cycle: heuristic learnings always; the deep LLM analysis only past
        3 attempts and outside its cooldown (``baton.memory.validation.record_validation``,
        which runs its database calls in worker threads too)."""
        if len(attempts) <= DEEP_ANALYSIS_AFTER_ATTEMPTS or model is None:
            if learnings:
                await self.record_learnings(learnings)
            return
        await record_validation(self.scope, learnings=learnings, attempts=attempts, provenance=self._provenance(),
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
