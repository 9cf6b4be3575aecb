"""The user-feedback cycle (seed 002 "The three learning cycles").

``record_feedback(scope, Feedback(...))`` turns one verdict into memory, in one
transaction:

| verdict | produces |
|---|---|
| ``confirmed`` | a benchmark: the question -> the SQL that answered it (needs ``sql``) |
| ``approximate`` | a session note with the deviation (needs ``deviation``) |
| ``rejected`` | a learning (the correction, category ``user_correction``) plus a stale flag on the question's benchmark(s) |
| ``thumbs_down`` | with a ``correction``: as ``rejected``; without: a session note that the answer was unhelpful, plus the stale flag |

Every produced record is about entity ``question``, attribute = the normalized question,
so the gate treats a second verdict on the same question as corroboration (same value),
or as a contradiction that supersedes the previous one (a different SQL, deviation or
correction). Provenance is ``feedback`` with the user and the session, and deliberately NO
outcome id: the witness of a verdict is the person in a session, not the click. A user who
posts the same correction twice in one session is repeating themselves (nothing moves);
the same verdict from another session or another user is independent evidence (+step).
(A fresh feedback id as the outcome made every click "independent", so one user could
push a correction to 1.0 by re-posting it.) The feedback id stays in the record's data.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from baton.memory.access import WorkspaceScope
from baton.memory.errors import InvalidRecordError
from baton.memory.model import Provenance, RecordDraft, normalize_key
from baton.memory.projection import from_row
from baton.memory.store import MemoryStore
from baton.memory.writer import WriteResult, remember_in

VERDICTS = ("confirmed", "approximate", "rejected", "thumbs_down")


@dataclass
class Feedback:
    question: str
    verdict: str
    sql: str | None = None
    connection_id: str | None = None
    deviation: str | None = None
    correction: str | None = None
    benchmark_id: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    feedback_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    tables: tuple[str, ...] = ()


@dataclass
class FeedbackOutcome:
    produced: str  # "benchmark" | "note" | "learning"
    result: WriteResult
    flagged_stale: list[str] = field(default_factory=list)


def question_key(question: str) -> str:
    return normalize_key(" ".join(question.lower().split()).rstrip("?.! "))[:300] or "question"


def record_feedback(scope: WorkspaceScope, fb: Feedback, *, now: Any = None) -> FeedbackOutcome:
    if fb.verdict not in VERDICTS:
        raise InvalidRecordError(f"unknown feedback verdict {fb.verdict!r}; expected one of {VERDICTS}")
    if not (fb.question or "").strip():
        raise InvalidRecordError("feedback needs the question it is about")
    store = MemoryStore.of(scope)
    prov = Provenance("feedback", session_id=fb.session_id, user_id=fb.user_id or scope.principal.user_id)
    key = question_key(fb.question)
    conn_scope = f"connection:{fb.connection_id}" if fb.connection_id else "workspace"
    base_data = {"question": fb.question.strip(), "tables": list(fb.tables), "feedback_id": fb.feedback_id}

    def about_question(kind: str, text: str, *, value: Any, category: str, data: dict[str, Any]) -> RecordDraft:
        return RecordDraft(kind, text, entity="question", attribute=key, scope=conn_scope, value=value,
                           category=category, connection_id=fb.connection_id, provenance=prov, data=data)

    flag = False
    if fb.verdict == "confirmed":
        sql = (fb.sql or "").strip()
        if not sql:
            raise InvalidRecordError("a confirmed verdict needs the SQL that produced the answer")
        produced, draft = "benchmark", about_question("benchmark", fb.question, value=" ".join(sql.split()),
                                                      category="benchmark", data={**base_data, "sql": sql})
    elif fb.verdict == "approximate":
        deviation = (fb.deviation or "").strip()
        if not deviation:
            raise InvalidRecordError("an approximate verdict needs the deviation")
        produced, draft = "note", about_question(
            "note", f'The answer to "{fb.question.strip()}" was approximate: {deviation}',
            value=fb.deviation, category="deviation", data={**base_data, "deviation": fb.deviation, "sql": fb.sql})
    elif fb.correction and fb.correction.strip():
        flag = True
        produced, draft = "learning", about_question(
            "learning", fb.correction, value=fb.correction, category="user_correction",
            data={**base_data, "rejected_sql": fb.sql, "verdict": fb.verdict})
    elif fb.verdict == "rejected":
        raise InvalidRecordError("a rejected verdict needs the correction (what is right instead)")
    else:
        flag = True
        produced, draft = "note", about_question(
            "note", f'The user marked the answer to "{fb.question.strip()}" as unhelpful', value="unhelpful",
            category="thumbs_down", data={**base_data, "sql": fb.sql})
    draft = draft.validated()
    r = store.tables.records

    def op(tx: Any) -> FeedbackOutcome:
        result = remember_in(tx, draft)
        flagged = []
        if flag:
            q = select(r).where(r.c.workspace == tx.workspace, r.c.kind == "benchmark", r.c.stale.is_(False),
                                r.c.is_active.is_(True))
            q = q.where((r.c.id == fb.benchmark_id) | ((r.c.entity == "question") & (r.c.attribute == key)))
            for bench in map(from_row, tx.conn.execute(q)):
                tx.record_event(bench, "record.flagged", {"stale": True, "reason": f"{fb.verdict} feedback {fb.feedback_id}"}, prov)
                flagged.append(bench.id)
        return FeedbackOutcome(produced, result, flagged)

    return store.transact(scope, op, now=now)
