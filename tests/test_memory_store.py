"""The store on a real SQLite file: the write path, supersession, erasure, isolation,
append-only enforcement by the database, concurrency errors, rebuild."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import DBAPIError

from baton.memory import (
    InvalidRecordError,
    MemoryStore,
    NewEvent,
    Principal,
    Provenance,
    RecordDraft,
    RecordNotFoundError,
    StaleVersionError,
    TokenAuthenticator,
    TrustedAuthenticator,
    Verdict,
    WorkspaceAccessError,
    WorkspaceScope,
)

ALWAYS = "Always allow external sharing of customer data"
NEVER = "Never allow external sharing of customer data"


class Clock:
    def __init__(self, t: float = 1_700_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, days: float) -> None:
        self.t += days * 86400


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


@pytest.fixture
def store(db_path, clock):
    s = MemoryStore(f"sqlite:///{db_path}", authenticator=TokenAuthenticator({"tok-a": "acme", "tok-b": "globex"}), clock=clock)
    yield s
    s.close()


@pytest.fixture
def scope(store):
    return store.open("tok-a")


def policy(text, value, session, scope="workspace"):
    return RecordDraft("learning", text, entity="customer-data-sharing", attribute="external-sharing-policy",
                       value=value, scope=scope, provenance=Provenance("manual", session_id=session))


def test_always_then_never_supersedes_atomically_and_never_reinforces(store, scope):
    old = store.remember(scope, policy(ALWAYS, "always", "s1")).record
    seq_before = store.head_seq(scope)
    result = store.remember(scope, policy(NEVER, "never", "s2"))
    assert result.action == "superseded" and result.superseded == [old.id]
    assert result.candidates[0].similarity == pytest.approx(0.8791, abs=1e-4)
    assert result.candidates[0].verdict is Verdict.CONTRADICTS
    stale = store.get(scope, old.id)
    assert (stale.status, stale.superseded_by, stale.confidence, stale.text) == ("superseded", result.record.id, 0.6, ALWAYS)
    assert (result.record.text, result.record.confidence, result.record.supersedes) == (NEVER, 0.6, [old.id])
    new_events = store.events(scope, after_seq=seq_before)
    assert [e.type for e in new_events] == ["record.superseded", "record.created"]
    # the two events are one transaction: the same commit time, consecutive chain positions
    assert new_events[1].position == new_events[0].position + 1
    assert [r.text for r in store.list_records(scope)] == [NEVER]


def test_self_repetition_changes_nothing_and_independent_corroboration_caps_at_one(store, scope):
    first = store.remember(scope, policy(NEVER, "deny", "s1")).record
    head = store.head_seq(scope)
    again = store.remember(scope, policy("never allow external sharing of customer data.", "never", "s1"))
    assert again.action == "unchanged" and store.head_seq(scope) == head
    assert store.get(scope, first.id).confidence == 0.6
    seen = []
    for i in range(2, 8):
        seen.append(store.remember(scope, policy(NEVER, "deny", f"s{i}")).record.confidence)
    assert seen == [0.7, 0.8, 0.9, 1.0, 1.0, 1.0]
    rec = store.get(scope, first.id)
    assert rec.text == NEVER and len(rec.provenance) == 7 and len(store.list_records(scope)) == 1


def test_retrieval_and_application_move_no_confidence(store, scope):
    from baton.memory import compile_bundle

    rec = store.remember(scope, policy(NEVER, "deny", "s1")).record
    for _ in range(3):
        assert rec.id in compile_bundle(scope, "may we share customer data externally?").record_ids
    store.mark_applied(scope, [rec.id])
    store.mark_applied(scope, [rec.id])
    after = store.get(scope, rec.id)
    assert (after.confidence, after.times_applied) == (0.6, 2)


def test_unit_change_supersedes(store, scope):
    def timeout(text, value, session):
        return RecordDraft("learning", text, entity="warehouse", attribute="query-timeout", value=value,
                           provenance=Provenance(session_id=session))
    old = store.remember(scope, timeout("timeout is 30s", "30s", "s1")).record
    result = store.remember(scope, timeout("timeout is 60s", "60s", "s2"))
    assert result.action == "superseded" and store.get(scope, old.id).superseded_by == result.record.id
    # a differently worded statement of the same value corroborates, whatever its similarity
    reworded = store.remember(scope, timeout("queries on the warehouse time out after one minute", "1 min", "s3"))
    assert reworded.action == "corroborated" and reworded.record.id == result.record.id


def test_scope_coexistence(store, scope):
    a = store.remember(scope, policy(ALWAYS, "allow", "s1", scope="project-a"))
    b = store.remember(scope, policy(NEVER, "deny", "s2", scope="project-b"))
    assert b.action == "created" and b.candidates[0].verdict is Verdict.COEXIST
    assert {r.id for r in store.list_records(scope)} == {a.record.id, b.record.id}
    # a workspace-wide correction does not reach into project-b; one aimed at project-b/x coexists too
    narrower = store.remember(scope, policy(ALWAYS, "allow", "s3", scope="project-b/reports"))
    assert narrower.action == "created" and store.get(scope, b.record.id).is_active


def test_unrelated_statements_with_shared_words_both_live(store, scope):
    py = store.remember(scope, RecordDraft("note", "Use Python", entity="language", attribute="preferred",
                                           value="python", provenance=Provenance(session_id="s1")))
    creds = store.remember(scope, RecordDraft("note", "Never use production credentials", entity="language",
                                              attribute="credentials", value="deny", provenance=Provenance(session_id="s2")))
    assert creds.action == "created"
    assert all(c.verdict is Verdict.UNRELATED for c in creds.candidates)
    assert store.get(scope, py.record.id).is_active and creds.record.confidence == 0.7


def test_invalid_drafts_are_typed_errors_and_write_nothing(store, scope):
    for bad in (RecordDraft("learning", "  ", entity="e", attribute="a"),
                RecordDraft("rumour", "x", entity="e", attribute="a"),
                RecordDraft("learning", "x", entity="", attribute="a"),
                RecordDraft("learning", "x", entity="e", attribute="a", data={"f": object()})):
        with pytest.raises(InvalidRecordError):
            store.remember(scope, bad)
    assert store.head_seq(scope) == 0


def test_isolation_between_workspaces(store):
    a, b = store.open("tok-a"), store.open("tok-b")
    rec = store.remember(a, policy(ALWAYS, "allow", "s1")).record
    with pytest.raises(RecordNotFoundError):
        store.get(b, rec.id)
    with pytest.raises(RecordNotFoundError):
        store.forget(b, rec.id)
    with pytest.raises(RecordNotFoundError):
        store.corroborate(b, rec.id, Provenance(session_id="evil"))
    with pytest.raises(RecordNotFoundError):
        store.history(b, rec.id)
    assert store.list_records(b) == [] and store.events(b) == []
    # B writing the same statement creates B's own record; A's stays untouched
    store.remember(b, policy(NEVER, "deny", "s9"))
    assert store.get(a, rec.id).is_active and store.get(a, rec.id).confidence == 0.6
    assert store.verify(a).events == 1 and store.verify(b).events == 1


def test_scopes_cannot_be_forged_or_reused_across_stores(store, tmp_path):
    with pytest.raises(WorkspaceAccessError):
        store.open("wrong-token")
    with pytest.raises(WorkspaceAccessError):
        store.open(Principal("globex"))  # a token store does not trust bare principals
    with pytest.raises(TypeError):
        WorkspaceScope()
    scope = store.open("tok-a")
    with pytest.raises(AttributeError):
        scope._principal = Principal("globex")
    other = MemoryStore(f"sqlite:///{tmp_path / 'other.db'}", authenticator=TrustedAuthenticator())
    with pytest.raises(WorkspaceAccessError):
        other.list_records(scope)
    with pytest.raises(WorkspaceAccessError):
        Principal("../etc")
    for forged in ("acme\n", "acme\r\n", "acme\x00", ""):  # a trailing newline is not the same workspace
        with pytest.raises(WorkspaceAccessError):
            Principal(forged)
    other.close()


def test_database_refuses_update_and_delete_of_journal_rows(store, scope, db_path):
    store.remember(scope, policy(ALWAYS, "allow", "s1"))
    con = sqlite3.connect(db_path)
    for sql in ("UPDATE baton_mem_events SET type = 'x'", "DELETE FROM baton_mem_events",
                "UPDATE baton_mem_payloads SET body = '{}'", "DELETE FROM baton_mem_payloads"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only|immutable|tombstone"):
            con.execute(sql)
    con.close()
    with store.engine.begin() as conn, pytest.raises(DBAPIError):
        conn.exec_driver_sql("DELETE FROM baton_mem_events")
    assert store.verify(scope).ok


def test_stale_expected_version_is_rejected(store, scope):
    store.append_events(scope, [NewEvent("config:x", "config.set", {"v": 1}, expected_version=0)])
    store.append_events(scope, [NewEvent("config:x", "config.set", {"v": 2}, expected_version=1)])
    with pytest.raises(StaleVersionError) as err:
        store.append_events(scope, [NewEvent("config:x", "config.set", {"v": 3}, expected_version=1)])
    assert (err.value.expected, err.value.actual) == (1, 2)
    rec = store.remember(scope, policy(ALWAYS, "allow", "s1")).record
    store.mark_applied(scope, [rec.id])
    with pytest.raises(StaleVersionError):
        store.forget(scope, rec.id, expected_version=rec.version)  # the caller read version 1; it is 2 now
    with pytest.raises(InvalidRecordError):
        store.append_events(scope, [NewEvent("record:" + rec.id, "record.status", {"status": "active"})])
    assert [e.payload["v"] for e in store.events(scope) if e.stream == "config:x"] == [1, 2]


def test_erasure_removes_text_everywhere_and_chain_still_verifies(store, scope, db_path):
    secret = "Customer Zyxwv Quartzberg prefers invoices in Klingon"
    keep = store.remember(scope, policy(ALWAYS, "allow", "s1")).record
    rec = store.remember(scope, RecordDraft("note", secret, entity="customer-zyxwv", attribute="invoice-language",
                                            value="klingon", provenance=Provenance(session_id="s1"))).record
    store.corroborate(scope, rec.id, Provenance(session_id="s2"))
    newer = store.remember(scope, RecordDraft("note", secret + " and Vulcan", entity="customer-zyxwv",
                                              attribute="invoice-language", value="vulcan", provenance=Provenance(session_id="s3")))
    assert newer.action == "superseded"
    for rid in (rec.id, newer.record.id):
        store.forget(scope, rid, reason="erasure request #12")
    report = store.verify(scope)
    assert report.ok and report.erased_payloads >= 4, report.problems
    assert store.check_projection(scope) == []
    with pytest.raises(RecordNotFoundError):
        store.get(scope, rec.id)
    history = store.history(scope, rec.id)
    assert history[-1].type == "record.forgotten" and history[-1].payload == {"reason": "erasure request #12"}
    assert all(e.erased for e in history[:-1])
    store.close()
    for path in db_path.parent.iterdir():  # the file, and any -wal / -shm beside it
        data = path.read_bytes()
        for needle in (b"Quartzberg", b"Zyxwv", b"zyxwv", b"Klingon", b"klingon"):
            assert needle not in data, f"{needle!r} survives in {path.name}"
    con = sqlite3.connect(db_path)
    dump = "\n".join(con.iterdump())
    con.close()
    assert "Quartzberg" not in dump and "zyxwv" not in dump.lower()
    assert ALWAYS in dump  # the rest of memory is intact
    reopened = MemoryStore(f"sqlite:///{db_path}", authenticator=TokenAuthenticator({"t": "acme"}))
    assert reopened.get(reopened.open("t"), keep.id).text == ALWAYS
    reopened.close()


def test_rebuild_equals_live_projection(store, scope, clock):
    from baton.memory import run_decay

    ids = [store.remember(scope, policy(f"rule {i} about sharing {i}", "allow", f"s{i}", scope=f"p{i % 3}")).record.id
           for i in range(6)]
    store.remember(scope, policy("rule 0 about sharing 0", "deny", "s9", scope="p0"))
    store.corroborate(scope, ids[1], Provenance(session_id="other"))
    store.flag_stale(scope, ids[2], "test")
    store.forget(scope, ids[3])
    clock.advance(400)
    run_decay(scope)
    before = {r.id: r for r in store.list_records(scope, active_only=False)}
    assert store.check_projection(scope) == []
    report = store.rebuild(scope)
    assert report.differences_before == [] and report.records == len(before)
    after = {r.id: r for r in store.list_records(scope, active_only=False)}
    assert after == before


def test_rebuild_repairs_a_damaged_projection(store, scope, db_path):
    rec = store.remember(scope, policy(ALWAYS, "allow", "s1")).record
    con = sqlite3.connect(db_path)
    con.execute("UPDATE baton_mem_records SET confidence = 0.99, text = 'tampered'")  # projections are not the truth
    con.commit()
    con.close()
    assert store.check_projection(scope)
    report = store.rebuild(scope)
    assert report.differences_before and store.get(scope, rec.id).text == ALWAYS
    assert store.check_projection(scope) == []
