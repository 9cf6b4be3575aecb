"""Regressions found in the memory review: each test failed before its fix.

Event-loop hygiene of the validation cycle, self-repetition through feedback, the gate on
statements without a value, physical erasure under a concurrent reader, typed errors."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import event

from baton.llm.testing import ScriptedModel
from baton.memory import MemoryStore, Principal, Provenance, TrustedAuthenticator
from baton.memory.bridge import SQLMemory


class Clock:
    def __init__(self):
        self.t = 1_700_000_000.0

    def __call__(self):
        return self.t


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


@pytest.fixture
def store(db_path):
    s = MemoryStore(f"sqlite:///{db_path}", authenticator=TrustedAuthenticator(), clock=Clock())
    yield s
    s.close()


@pytest.fixture
def scope(store):
    return store.open(Principal("acme", user_id="u1"))


async def test_validation_cycle_never_runs_database_calls_on_the_event_loop(store, scope):
    """A SQLite writer can wait 30 s for the lock; on the loop that would stall every request."""
    threads: list[int] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a, **k: threads.append(threading.get_ident()))
    model = ScriptedModel([json.dumps({"learnings": [{"category": "schema_gotcha", "lesson": "orders has deleted_at",
                                                      "tables": ["orders"], "columns": ["deleted_at"]}]})])
    attempts = [{"sql": "SELECT * FROM order", "error": "no such table"}] * 4 + [{"sql": "SELECT * FROM orders"}]
    learning = {"category": "table_preference", "lesson": "Use orders, not order", "tables": ["orders", "order"],
                "connection_id": "wh", "entity": "order", "attribute": "use_instead", "value": "orders"}
    await SQLMemory(store, scope).record_validation(question="orders", connection_id="wh", learnings=[learning],
                                                    attempts=attempts, model=model)
    during = list(threads)
    assert len(model.calls) == 1 and len(store.list_records(scope)) == 2  # the deep path really ran
    assert during and threading.get_ident() not in during


def test_repeated_feedback_in_one_session_is_self_repetition(store, scope):
    """Each POST got a fresh feedback id as its 'observed outcome', so re-posting one
    correction in one session pumped it +0.1 a time; the witness is the session's user."""
    from baton.memory import Feedback, record_feedback

    def reject(session):
        return record_feedback(scope, Feedback("Revenue last month?", "rejected", correction="Revenue excludes refunds",
                                               sql="SELECT sum(amount) FROM orders", connection_id="wh",
                                               session_id=session))

    first = reject("s1").result
    assert first.action == "created" and first.record.confidence == 0.6
    for _ in range(3):
        again = reject("s1").result
        assert again.action == "unchanged" and again.record.confidence == 0.6
    other = reject("s2").result  # another session: independent evidence
    assert other.action == "corroborated" and other.record.confidence == 0.7
    down = [record_feedback(scope, Feedback("Top products?", "thumbs_down", session_id="s1")).result for _ in range(2)]
    assert [d.action for d in down] == ["created", "unchanged"] and down[1].record.confidence == 0.7


def test_statements_without_a_value_never_reinforce_a_different_statement(store, scope):
    """Deep-analysis lessons carry no value; None == None made the gate call two opposite
    lessons about one subject 'corroborates': the old one +0.1, the new text dropped."""
    from baton.memory import ingest_learnings

    def lesson(text, session):
        return ingest_learnings(scope, [{"category": "schema_gotcha", "lesson": text, "tables": ["orders"],
                                         "columns": ["deleted_at"], "connection_id": "wh"}],
                                provenance=Provenance("llm_analysis", session_id=session))[0]

    always = lesson("Always filter orders on deleted_at IS NULL", "s1")
    never = lesson("Never filter orders on deleted_at: it is always NULL", "s2")
    assert never.action == "created" and never.candidates[0].verdict.value == "coexist"
    live = {r.text: r.confidence for r in store.list_records(scope)}
    assert live == {"Always filter orders on deleted_at IS NULL": 0.6,
                    "Never filter orders on deleted_at: it is always NULL": 0.6}
    repeat = lesson("always filter orders on  deleted_at IS NULL", "s3")  # the same lesson, another witness
    assert repeat.action == "corroborated" and repeat.record.id == always.record.id and repeat.record.confidence == 0.7


def test_erased_text_leaves_the_wal_even_when_a_reader_blocked_the_checkpoint(store, scope, db_path):
    """forget's one checkpoint failed silently under a concurrent reader, and the erased
    text stayed in the -wal file for as long as the store ran."""
    import sqlite3

    from baton.memory import RecordDraft

    rec = store.remember(scope, RecordDraft("note", "Customer Quartzberg pays in Klingon darsek", entity="customer",
                                            attribute="currency", provenance=Provenance(session_id="s1"))).record
    reader = sqlite3.connect(db_path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM baton_mem_records").fetchall()  # holds a snapshot with the text
    store.forget(scope, rec.id)
    assert store.erasure_pending
    reader.rollback()
    reader.close()
    store.remember(scope, RecordDraft("note", "unrelated", entity="other", attribute="x",
                                      provenance=Provenance(session_id="s1")))  # any later write retries
    assert not store.erasure_pending
    for path in db_path.parent.iterdir():  # the store is still open: the file, -wal and -shm
        assert b"Quartzberg" not in path.read_bytes(), path.name


@pytest.mark.parametrize("field, value", [("entity", "e" * 301), ("attribute", "a" * 301), ("scope", "s" * 301),
                                          ("category", "c" * 65), ("connection_id", "w" * 181)])
def test_oversized_structured_fields_are_typed_errors_and_write_nothing(store, scope, field, value):
    """SQLite ignores column sizes, PostgreSQL refuses them with a raw DataError mid-write."""
    from baton.memory import InvalidRecordError, RecordDraft

    fields = {"entity": "customer", "attribute": "currency", field: value}
    with pytest.raises(InvalidRecordError, match=field):
        store.remember(scope, RecordDraft("note", "text", provenance=Provenance(session_id="s1"), **fields))
    assert store.head_seq(scope) == 0


def test_a_locked_database_is_a_typed_error_and_writes_nothing(store, scope, db_path):
    """A writer that outwaited the busy timeout surfaced sqlalchemy's OperationalError."""
    import sqlite3

    from baton.memory import MemoryStoreError, MemoryUnavailableError, RecordDraft

    event.listen(store.engine, "connect", lambda dbapi, _: dbapi.execute("PRAGMA busy_timeout=0"))
    store.engine.dispose()  # new connections, without the 30 s wait
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(MemoryUnavailableError) as caught:
            store.remember(scope, RecordDraft("note", "text", entity="e", attribute="a",
                                              provenance=Provenance(session_id="s1")))
        assert isinstance(caught.value, MemoryStoreError)
    finally:
        holder.rollback()
        holder.close()
    assert store.head_seq(scope) == 0
