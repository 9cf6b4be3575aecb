"""The validation cycle: learnings from SQL calls that failed and were then fixed.

The SQL specialist's heuristic extractors (wrong table, renamed column, unit divisor,
soft-delete filter, missing LIMIT) produce objects with ``category, lesson, tables,
columns, connection_id`` and optionally ``entity, attribute, value``
(``ExtractedLearning``-shaped, or plain dicts). ``ingest_learnings`` stores them through
the gate; when a learning has no entity/attribute the subject is derived: entity = the
tables it names (sorted, comma-joined; ``connection`` if none), attribute = category plus
the columns it names. Learnings of a connection live in scope ``connection:<id>``, so the
same table name on two databases never supersedes across them.

``record_validation`` is the full cycle for one call: ingest the heuristic learnings,
then, only when the call took MORE than 3 attempts, a model is given, and the last deep
analysis of that connection is older than the cooldown (15 minutes by default), ask the
model for extra lessons. The model's answer is untrusted input: it must be a JSON object
``{"learnings": [{"category", "lesson", "tables", "columns"}...]}``; at most 5 are kept,
each checked (known category, non-empty lesson under 500 characters, lists of names);
the rest are counted as rejected, and nothing it says is ever executed. Its learnings carry
the call's own provenance key (source ``llm_analysis``): an LLM re-reading the same
attempts is not independent evidence, so it can never corroborate the heuristic ones.
The cooldown mark is a journal event (stream ``analysis:<connection>``) written before the
model is called, so concurrent calls cannot stampede the model. Every database call of
``record_validation`` runs in a worker thread: a SQLite writer may wait up to its 30 s
busy timeout for the write lock, which must never stall the event loop.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from baton.errors import BatonError
from baton.llm.base import ChatModel
from baton.memory.access import WorkspaceScope
from baton.memory.errors import InvalidRecordError
from baton.memory.journal import NewEvent
from baton.memory.model import Provenance, RecordDraft
from baton.memory.store import MemoryStore
from baton.memory.writer import WriteResult, remember_in
from baton.messages import Message

CATEGORIES = ("table_preference", "column_correction", "format_discovery", "schema_gotcha", "performance_hint",
              "user_correction", "general")
DEEP_ANALYSIS_AFTER_ATTEMPTS = 3
DEEP_ANALYSIS_COOLDOWN_S = 900.0
MAX_MODEL_LEARNINGS = 5
MAX_LESSON_CHARS = 500


class LearningLike(Protocol):
    """A learning as the SQL specialist extracts it (read only, so its list fields qualify)."""

    @property
    def category(self) -> str: ...
    @property
    def lesson(self) -> str: ...
    @property
    def tables(self) -> Sequence[str]: ...
    @property
    def columns(self) -> Sequence[str]: ...
    @property
    def connection_id(self) -> str | None: ...


def _field(item: Any, name: str, default: Any = None) -> Any:
    if isinstance(item, Mapping):
        return item.get(name, default)
    return getattr(item, name, default)


def learning_draft(item: LearningLike | Mapping[str, Any], provenance: Provenance) -> RecordDraft:
    """A validated draft from an extracted learning, or ``InvalidRecordError``."""
    category = str(_field(item, "category") or "").strip().lower()
    if category not in CATEGORIES:
        raise InvalidRecordError(f"unknown learning category {category!r}; expected one of {CATEGORIES}")
    lesson = _field(item, "lesson")
    if not isinstance(lesson, str) or not lesson.strip():
        raise InvalidRecordError("a learning needs a non-empty lesson")
    tables = sorted({str(t) for t in (_field(item, "tables") or ())})
    columns = sorted({str(c) for c in (_field(item, "columns") or ())})
    connection_id = _field(item, "connection_id")
    entity = _field(item, "entity") or (",".join(tables) if tables else "connection")
    attribute = _field(item, "attribute") or (category + (":" + ",".join(columns) if columns else ""))
    return RecordDraft(
        "learning", lesson, entity=entity, attribute=attribute, value=_field(item, "value"), category=category,
        connection_id=connection_id, scope=f"connection:{connection_id}" if connection_id else "workspace",
        provenance=provenance, data={"tables": tables, "columns": columns}).validated()


def ingest_learnings(scope: WorkspaceScope, learnings: Iterable[LearningLike | Mapping[str, Any]], *,
                     provenance: Provenance, now: Any = None) -> list[WriteResult]:
    """Store extracted learnings through the gate, all in one transaction (all or none)."""
    drafts = [learning_draft(item, provenance) for item in learnings]
    store = MemoryStore.of(scope)
    return store.transact(scope, lambda tx: [remember_in(tx, d) for d in drafts], now=now) if drafts else []


@dataclass
class ValidationOutcome:
    results: list[WriteResult] = field(default_factory=list)
    deep_ran: bool = False
    deep_skipped: str | None = None  # why deep analysis did not run
    deep_results: list[WriteResult] = field(default_factory=list)
    deep_rejected: int = 0
    deep_error: str | None = None


_SYSTEM = ("You analyse a sequence of SQL attempts that failed before one succeeded and state reusable lessons "
           "about the database. Answer with JSON only: {\"learnings\": [{\"category\": one of "
           + ", ".join(CATEGORIES) + ", \"lesson\": str, \"tables\": [str], \"columns\": [str]}]}. "
           "At most 5 lessons; none if nothing general can be learned.")


def describe_attempts(attempts: Sequence[Any]) -> str:
    lines = []
    for i, attempt in enumerate(attempts, 1):
        sql, error = _field(attempt, "sql"), _field(attempt, "error")
        lines.append(f"Attempt {i}:\nSQL: {sql if sql is not None else attempt}\nError: {error or 'none (succeeded)'}")
    return "\n\n".join(lines)


def parse_model_learnings(text: str) -> tuple[list[dict[str, Any]], int]:
    """(accepted items, rejected count) from untrusted model output."""
    match = re.search(r"\{.*\}", text or "", re.S)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    items = data.get("learnings") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise InvalidRecordError("the model did not answer with {\"learnings\": [...]}")
    accepted: list[dict[str, Any]] = []
    rejected = 0
    for item in items:
        ok = (isinstance(item, dict) and item.get("category") in CATEGORIES and isinstance(item.get("lesson"), str)
              and 0 < len(item["lesson"].strip()) <= MAX_LESSON_CHARS
              and all(isinstance(v, list) and all(isinstance(x, str) for x in v)
                      for v in (item.get("tables", []), item.get("columns", []))))
        if ok and len(accepted) < MAX_MODEL_LEARNINGS:
            accepted.append({k: item.get(k, []) for k in ("category", "lesson", "tables", "columns")})
        else:
            rejected += 1
    return accepted, rejected


async def record_validation(scope: WorkspaceScope, *, learnings: Iterable[Any], attempts: Sequence[Any],
                            provenance: Provenance, connection_id: str | None = None, question: str = "",
                            model: ChatModel | None = None, cooldown_s: float = DEEP_ANALYSIS_COOLDOWN_S,
                            now: Any = None) -> ValidationOutcome:
    store = MemoryStore.of(scope)
    at = store.epoch(now)
    learnings = list(learnings)
    outcome = ValidationOutcome(results=await asyncio.to_thread(ingest_learnings, scope, learnings,
                                                                provenance=provenance, now=at))
    if len(attempts) <= DEEP_ANALYSIS_AFTER_ATTEMPTS:
        outcome.deep_skipped = f"{len(attempts)} attempts (deep analysis only past {DEEP_ANALYSIS_AFTER_ATTEMPTS})"
        return outcome
    if model is None:
        outcome.deep_skipped = "no model"
        return outcome
    stream = f"analysis:{connection_id or 'workspace'}"

    def claim(tx: Any) -> bool:
        last = None
        for event in store.journal.read(tx.conn, tx.workspace, stream=stream):
            last = event
        if last is not None and tx.now - last.recorded_at < cooldown_s:
            return False
        tx.append([NewEvent(stream, "analysis.deep", {"attempts": len(attempts)}, last.version if last else 0, provenance)])
        return True

    if not await asyncio.to_thread(store.transact, scope, claim, now=at):
        outcome.deep_skipped = "cooldown"
        return outcome
    outcome.deep_ran = True
    prompt = (f"Question: {question}\nConnection: {connection_id}\n\n" if question else "") + describe_attempts(attempts)
    try:
        response = await model.complete([Message.system(_SYSTEM), Message.user(prompt)], temperature=0)
        items, outcome.deep_rejected = parse_model_learnings(response.content)
    except (BatonError, InvalidRecordError) as exc:
        outcome.deep_error = f"{type(exc).__name__}: {exc}"
        return outcome
    deep_prov = Provenance("llm_analysis", session_id=provenance.session_id, agent=provenance.agent,
                           outcome_id=provenance.outcome_id, user_id=provenance.user_id)
    for item in items:
        item["connection_id"] = connection_id
    outcome.deep_results = await asyncio.to_thread(ingest_learnings, scope, items, provenance=deep_prov, now=at)
    return outcome
