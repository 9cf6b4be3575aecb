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
