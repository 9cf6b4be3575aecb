"""The compiled per-task bundle: the only way memory reaches a model.

``compile_bundle(scope, task, connection_id=..., token_budget=...)`` returns the text to
put in the model's context and a ``BundleLock`` to save with the answer: the journal
sequence the bundle was compiled at, the hash of the workspace's newest event then
(``head_hash``), plus (record id, content hash) of every record it included, so any answer
can be traced to exactly what the agent knew (replaying the journal up to ``journal_seq``
reproduces every confidence shown). A saved lock is also an external anchor of the journal:
``MemoryStore.verify(scope, expected_head=lock)`` reports if that head was deleted.

What goes in, in priority order, while the token budget lasts (``estimate_tokens``):
1. doctrine sections: always eligible (no relevance or confidence threshold), ranked by
   relevance to the task; a section that does not fit is skipped, not cut mid-rule;
2. verified queries (benchmarks) relevant to the task, not flagged stale;
3. learnings of the task's connection and of the whole workspace, active and fresh, ranked
   by relevance x confidence, as "- {lesson} [NN%]";
4. promoted patterns, "- [global, seen on N DBs] {lesson}" (at most 5);
5. sibling-connection learnings, "- [from sibling] {lesson} [NN%]" (at most 8);
6. session notes, active and fresh (a volatile note past its window is out whatever its
   confidence, verified or not).
A learning or note included past its stale window (not corroborated for a full cycle of its
confidence policy, ``confidence.stale_cycles``; verified notes exempt) is named in
``Bundle.stale``, so an answer that leaned on it says so (``AIMessage.staleness_warning``).
Stale-flagged benchmarks never go in, so they need no warning.
Retrieval moves no confidence: compiling a bundle writes nothing. Callers that actually
used records report it with ``MemoryStore.mark_applied``.

Relevance is lexical (shared words between the task and a record's text, entity,
attribute and tables), over at most ``CANDIDATES`` records per section pulled by the
(workspace, kind, is_active, connection_id, confidence) index, so compiling stays cheap
in a workspace of 100k records.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import or_, select

from baton.llm.tokens import estimate_tokens
from baton.memory.access import WorkspaceScope
from baton.memory.confidence import POLICIES, stale_cycles
from baton.memory.journal import GENESIS
from baton.memory.model import GLOBAL_SCOPE, Record
from baton.memory.projection import from_row
from baton.memory.store import MemoryStore
from baton.memory.transfer import (
    GLOBAL_LIMIT,
    TRANSFER_LIMIT,
    TRANSFER_MIN_CONFIDENCE,
    TRANSFERABLE,
    global_line,
    pct,
    sibling_line,
)

CANDIDATES = 200
DEFAULT_TOKEN_BUDGET = 1500
_STOP = frozenset("the a an and or of to in on for with by is are was were be this that from as at it its which what "
                  "how many much show me list give all per each".split())


@dataclass(frozen=True)
class BundleLock:
    journal_seq: int
    records: tuple[tuple[str, str], ...]
    head_hash: str = GENESIS  # hash of the event at journal_seq (GENESIS: the workspace was empty)

    @property
    def head(self) -> tuple[int, str]:
        return self.journal_seq, self.head_hash

    def to_dict(self) -> dict[str, Any]:
        return {"journal_seq": self.journal_seq, "head_hash": self.head_hash,
                "records": [list(pair) for pair in self.records]}


@dataclass(frozen=True)
class Bundle:
    text: str
    lock: BundleLock
    tokens: int
    sections: dict[str, list[str]] = field(default_factory=dict)  # section -> record ids
    stale: tuple[str, ...] = ()  # included records past their stale window, one line each (module docstring)
    tables: tuple[str, ...] = ()  # the tables the included verified queries and lessons are about: the table picker ranks them up

    @property
    def record_ids(self) -> list[str]:
        return [rid for rid, _ in self.lock.records]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_]+", text.lower()) if len(w) > 2 and w not in _STOP}


def relevance(task_words: set[str], rec: Record) -> float:
    tables = " ".join(rec.data.get("tables") or [])
    words = _words(" ".join((rec.text, rec.entity.replace("-", " "), rec.attribute.replace("-", " "), tables,
                             str(rec.data.get("question", "")))))
    if not words or not task_words:
        return 0.0
    return len(words & task_words) / math.sqrt(len(words))


def compile_bundle(scope: WorkspaceScope, task: str, *, connection_id: str | None = None,
                   token_budget: int = DEFAULT_TOKEN_BUDGET, now: Any = None) -> Bundle:
    store = MemoryStore.of(scope)
    at = store.epoch(now)
    r = store.tables.records
    task_words = _words(task)

    with store.reading(scope) as (conn, ws):
        head = store.journal.last_event(conn, ws)  # first statement: the snapshot the rest reads

        def fetch(kind: str, *conditions: Any) -> list[Record]:
            q = (select(r).where(r.c.workspace == ws, r.c.kind == kind, r.c.is_active.is_(True), *conditions)
                 .order_by(r.c.confidence.desc(), r.c.id).limit(CANDIDATES))
            return [rec for rec in map(from_row, conn.execute(q)) if rec.validity.fresh_at(at)]

        local = or_(r.c.connection_id.is_(None), r.c.connection_id == connection_id) if connection_id else r.c.connection_id.is_(None)
        doctrine = fetch("doctrine")
        benchmarks = [b for b in fetch("benchmark", local, r.c.stale.is_(False)) if relevance(task_words, b) > 0]
        learnings = fetch("learning", local, r.c.scope != GLOBAL_SCOPE)
        globals_ = fetch("learning", r.c.scope == GLOBAL_SCOPE)
        siblings = fetch("learning", r.c.category.in_(TRANSFERABLE), r.c.confidence >= TRANSFER_MIN_CONFIDENCE,
                         r.c.connection_id.is_not(None), r.c.connection_id != connection_id,
                         r.c.scope != GLOBAL_SCOPE) if connection_id else []
        notes = fetch("note", local)

    def ranked(records: list[Record], by_confidence: bool = True) -> list[Record]:
        return sorted(records, key=lambda rec: (-(relevance(task_words, rec) + 0.01) * (rec.confidence if by_confidence else 1),
                                                -rec.confidence, rec.id))

    builder = _Builder(token_budget, at)
    builder.section("Doctrine", ranked(doctrine, False),
                    lambda rec: f"#### {rec.data.get('heading') or rec.attribute} ({rec.data.get('path', '')})\n{rec.text}")
    builder.section("Verified queries", ranked(benchmarks),
                    lambda rec: f"- Q: {rec.data.get('question', rec.text)}\n  SQL: {rec.data.get('sql', rec.value)}")
    builder.section("Learnings", ranked(learnings), lambda rec: f"- {rec.text} [{pct(rec.confidence)}%]")
    known = {rec.lesson_hash for rec in learnings}
    builder.section("Learnings", [g for g in globals_ if g.lesson_hash not in known][:GLOBAL_LIMIT], global_line)
    known |= {rec.lesson_hash for rec in globals_}
    sibling_known = {rec.lesson_hash for rec in learnings if rec.connection_id == connection_id}
    chosen: list[Record] = []
    for rec in siblings:
        if rec.lesson_hash not in known and rec.lesson_hash not in sibling_known:
            sibling_known.add(rec.lesson_hash)
            chosen.append(rec)
    builder.section("Learnings", chosen[:TRANSFER_LIMIT], sibling_line)
    builder.section("Notes", ranked(notes),
                    lambda rec: f"- {rec.text} [{pct(rec.confidence)}%]" + (" (verified)" if rec.verified else ""))
    return builder.build(*head)


class _Builder:
    def __init__(self, budget: int, at: float = 0.0):
        self.at = at
        self.stale: list[str] = []
        self.budget = budget
        self.used = estimate_tokens("## Memory for this task\n")
        self.blocks: dict[str, list[str]] = {}
        self.ids: dict[str, list[str]] = {}
        self.lock: list[tuple[str, str]] = []
        self.seen: set[str] = set()
        self.tables: list[str] = []

    def section(self, title: str, records: list[Record], render: Any) -> None:
        for rec in records:
            if rec.id in self.seen:
                continue
            line = render(rec)
            cost = estimate_tokens(line + "\n") + (0 if title in self.blocks else estimate_tokens(f"\n### {title}\n"))
            if self.used + cost > self.budget:
                continue
            self.used += cost
            self.blocks.setdefault(title, []).append(line)
            self.ids.setdefault(title, []).append(rec.id)
            self.lock.append((rec.id, rec.content_hash))
            self.seen.add(rec.id)
            self.tables.extend(str(t) for t in rec.data.get("tables") or () if str(t) not in self.tables)
            if _past_window(rec, self.at):
                self.stale.append(f"{rec.kind} {rec.text!r} (not confirmed in {_days(rec, self.at)} days)")

    def build(self, seq: int, head_hash: str) -> Bundle:
        if not self.blocks:
            return Bundle("", BundleLock(seq, (), head_hash), 0, {})
        parts = ["## Memory for this task"]
        for title, lines in self.blocks.items():
            parts.append(f"\n### {title}")
            parts.extend(lines)
        text = "\n".join(parts)
        return Bundle(text, BundleLock(seq, tuple(self.lock), head_hash), estimate_tokens(text), dict(self.ids),
                      tuple(self.stale), tuple(self.tables))


def _past_window(rec: Record, at: float) -> bool:
    if rec.kind not in POLICIES or (rec.kind == "note" and rec.verified):
        return False
    return stale_cycles(rec.kind, rec.anchor_at, at) >= 1


def _days(rec: Record, at: float) -> int:
    return int((at - rec.anchor_at) // 86400)
