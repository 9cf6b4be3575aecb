"""External head anchors: deletion of the newest journal events, invisible to the hash chain
alone, is caught by ``verify(expected_head=...)`` with a head saved outside the database
(a bundle lock on an answer, an operator's note), on SQLite and PostgreSQL and in the CLI."""

from __future__ import annotations

import sqlite3
import uuid

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from baton.cli import build_app
from baton.memory import InvalidRecordError, MemoryStore, Principal, Provenance, RecordDraft, TrustedAuthenticator, compile_bundle
from baton.memory.journal import GENESIS


def note(i: int) -> RecordDraft:
    return RecordDraft("learning", f"warehouse table t{i} is partitioned by day", entity=f"table-t{i}",
                       attribute="partitioning", value="day", provenance=Provenance(session_id=f"s{i}"))


@pytest.fixture
def sqlite_store(tmp_path):
    db = tmp_path / "memory.db"
    store = MemoryStore(f"sqlite:///{db}", authenticator=TrustedAuthenticator())
    yield store, db
    store.close()


def truncate_sqlite(db, after_seq: int) -> None:
    """What an attacker with the file does: drop the guards, delete the tail, leave no trace."""
    con = sqlite3.connect(db)
    con.execute("DROP TRIGGER baton_mem_events_no_delete")
    con.execute("DROP TRIGGER baton_mem_payloads_delete_needs_tombstone")
    con.execute("DELETE FROM baton_mem_payloads WHERE event_id IN "
                "(SELECT event_id FROM baton_mem_events WHERE seq > ?)", (after_seq,))
    con.execute("DELETE FROM baton_mem_events WHERE seq > ?", (after_seq,))
    con.commit()
    con.close()


def test_lock_carries_the_head_it_was_compiled_at(sqlite_store):
    store, _ = sqlite_store
    scope = store.open(Principal("acme"))
    empty = compile_bundle(scope, "partitioning of t1")
    assert empty.lock.head == (0, GENESIS) and empty.lock.to_dict()["head_hash"] == GENESIS
    for i in range(3):
        store.remember(scope, note(i))
    lock = compile_bundle(scope, "partitioning of t1").lock
    newest = store.events(scope)[-1]
    assert lock.head == (newest.seq, newest.hash)
    assert lock.to_dict() == {"journal_seq": newest.seq, "head_hash": newest.hash, "records": [list(p) for p in lock.records]}
    assert store.verify(scope).head_hash == newest.hash and store.verify(scope).last_seq == newest.seq


def test_truncated_tail_passes_the_chain_alone_but_fails_against_the_lock(sqlite_store):
    """The limitation this anchor exists for: after the newest events are deleted (triggers
    dropped), what remains still links from genesis, so ``verify()`` without an anchor
    reports ok. Only the head saved with an earlier answer shows the loss."""
    store, db = sqlite_store
    scope = store.open(Principal("acme"))
    for i in range(2):
        store.remember(scope, note(i))
    kept = store.head_seq(scope)
    for i in range(2, 5):
        store.remember(scope, note(i))
    lock = compile_bundle(scope, "partitioning of t3").lock.to_dict()  # saved with an answer
    assert store.verify(scope, expected_head=lock).anchored is True

    truncate_sqlite(db, kept)

    alone = store.verify(scope)
    assert alone.ok and alone.events == 2 and alone.anchored is None  # the chain alone cannot tell
    for anchor in (lock, (lock["journal_seq"], lock["head_hash"]), f"{lock['journal_seq']}:{lock['head_hash']}",
                   lock["head_hash"]):
        report = store.verify(scope, expected_head=anchor)
        assert not report.ok and report.anchored is False, anchor
        assert any("no longer in the chain" in p for p in report.problems), report.problems

    # the attacker writes on: SQLite hands the deleted seq to a new event, which the anchor also sees
    store.remember(scope, note(9))
    store.remember(scope, note(10))
    store.remember(scope, note(11))
    assert store.verify(scope).ok
    report = store.verify(scope, expected_head=lock)
    assert not report.ok and report.anchored is False
    assert any("different event" in p or "no longer in the chain" in p for p in report.problems), report.problems


def test_events_appended_after_the_anchor_keep_it_valid(sqlite_store):
    store, _ = sqlite_store
    scope = store.open(Principal("acme"))
    store.remember(scope, note(1))
    lock = compile_bundle(scope, "t1").lock
    store.remember(scope, note(2))
    report = store.verify(scope, expected_head=lock)
    assert report.ok and report.anchored is True and report.head_hash != lock.head_hash
    other = store.open(Principal("globex"))
    store.remember(other, note(1))
    wrong = store.verify(other, expected_head=lock.head_hash)  # another workspace's head is not in this chain
    assert not wrong.ok and wrong.anchored is False


@pytest.mark.parametrize("bad", ["nothex", "12:" + "g" * 64, "-1:" + "a" * 64, "x:" + "a" * 64, {"journal_seq": 3},
                                 ("a" * 64,), 42])
def test_malformed_anchor_is_a_typed_error(sqlite_store, bad):
    store, _ = sqlite_store
    with pytest.raises(InvalidRecordError):
        store.verify(store.open(Principal("acme")), expected_head=bad)


def run(*args):
    result = CliRunner().invoke(build_app(), ["memory", *args], catch_exceptions=False, env={"COLUMNS": "250"})
    return result.exit_code, result.output


def test_cli_expect_head(sqlite_store):
    store, db = sqlite_store
    scope = store.open(Principal("acme"))
    for i in range(3):
        store.remember(scope, note(i))
    seq, head = compile_bundle(scope, "t1").lock.head
    store.close()
    url = f"sqlite:///{db}"
    code, out = run("verify", "--db", url)
    assert code == 0 and f"head {seq}:{head}" in out  # what an operator notes down
    code, out = run("verify", "--db", url, "-w", "acme", "--expect-head", f"{seq}:{head}")
    assert code == 0 and "anchored head present" in out
    code, out = run("verify", "--db", url, "--expect-head", head)
    assert code == 2 and "--workspace" in out
    code, out = run("verify", "--db", url, "-w", "acme", "--expect-head", "abc")
    assert code == 2 and "64 hex" in out
    truncate_sqlite(db, seq - 1)
    code, out = run("verify", "--db", url, "-w", "acme")
    assert code == 0 and "ok" in out
    code, out = run("verify", "--db", url, "-w", "acme", "--expect-head", head)
    assert code == 1 and "BROKEN" in out and "anchored head MISSING" in out and "no longer in the chain" in out


@pytest.mark.postgres
def test_postgres_truncated_tail_fails_against_the_lock(postgres_url):
    schema = f"baton_mem_{uuid.uuid4().hex[:10]}"
    admin = create_engine(postgres_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    store = MemoryStore(postgres_url, authenticator=TrustedAuthenticator(), schema=schema)
    try:
        scope = store.open(Principal("acme"))
        store.remember(scope, note(1))
        kept = store.head_seq(scope)
        store.remember(scope, note(2))
        lock = compile_bundle(scope, "t2").lock
        assert store.verify(scope, expected_head=lock).anchored is True
        with admin.begin() as conn:
            conn.execute(text(f'DROP TRIGGER baton_mem_events_no_change ON "{schema}".baton_mem_events'))
            conn.execute(text(f'DROP TRIGGER baton_mem_payloads_delete ON "{schema}".baton_mem_payloads'))
            conn.execute(text(f'DELETE FROM "{schema}".baton_mem_payloads WHERE event_id IN '
                              f'(SELECT event_id FROM "{schema}".baton_mem_events WHERE seq > :s)'), {"s": kept})
            conn.execute(text(f'DELETE FROM "{schema}".baton_mem_events WHERE seq > :s'), {"s": kept})
        assert store.verify(scope).ok  # the chain alone cannot tell
        report = store.verify(scope, expected_head=lock)
        assert not report.ok and report.anchored is False
    finally:
        store.close()
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def test_a_bundle_names_the_tables_its_verified_queries_and_lessons_are_about(sqlite_store):
    store, _ = sqlite_store
    scope = store.open(Principal("acme"))
    store.remember(scope, RecordDraft("benchmark", "revenue by region", entity="q-revenue", attribute="sql",
                                      value="SELECT r.name, SUM(o.amount) FROM orders o JOIN regions r ON r.id = o.region_id",
                                      data={"question": "revenue by region", "tables": ["orders", "regions"]}))
    store.remember(scope, RecordDraft("learning", "orders.amount is in cents", entity="table-orders", attribute="units",
                                      value="cents", data={"tables": ["orders"]}, provenance=Provenance(session_id="s1")))
    store.remember(scope, RecordDraft("learning", "warehouse stock counts are nightly", entity="table-stock",
                                      attribute="freshness", value="nightly", data={"tables": ["stock"]},
                                      provenance=Provenance(session_id="s2")))
    bundle = compile_bundle(scope, "What was the revenue by region?")
    assert bundle.tables[:2] == ("orders", "regions")  # the verified query's tables, used together, first
