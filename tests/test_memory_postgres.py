"""The same journal on PostgreSQL (each test in its own schema, dropped afterwards):
append-only triggers, supersession and rebuild, erasure, isolation, concurrent writers."""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from baton.memory import (
    MemoryStore,
    NewEvent,
    Principal,
    Provenance,
    RecordDraft,
    RecordNotFoundError,
    StaleVersionError,
    TrustedAuthenticator,
    compile_bundle,
    run_decay,
)

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(postgres_url):
    schema = f"baton_mem_{uuid.uuid4().hex[:10]}"
    admin = create_engine(postgres_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    store = MemoryStore(postgres_url, authenticator=TrustedAuthenticator(), schema=schema)
    try:
        yield store, schema
    finally:
        store.close()
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def draft(value, session, text_=None):
    return RecordDraft("learning", text_ or f"query timeout is {value}", entity="warehouse", attribute="timeout",
                       value=value, provenance=Provenance(session_id=session))


def test_postgres_refuses_changes_to_journal_rows(pg_store):
    store, schema = pg_store
    scope = store.open(Principal("acme"))
    store.remember(scope, draft("30s", "s1"))
    for sql in (f'UPDATE "{schema}".baton_mem_events SET type = \'x\'', f'DELETE FROM "{schema}".baton_mem_events',
                f'TRUNCATE "{schema}".baton_mem_events CASCADE', f'UPDATE "{schema}".baton_mem_payloads SET body = \'{{}}\'',
                f'DELETE FROM "{schema}".baton_mem_payloads'):
        with store.engine.begin() as conn, pytest.raises(DBAPIError, match="append-only|tombstone"):
            conn.execute(text(sql))
    assert store.verify(scope).ok


def test_postgres_supersession_rebuild_erasure_isolation(pg_store):
    store, schema = pg_store
    a, b = store.open(Principal("acme")), store.open(Principal("globex"))
    old = store.remember(a, draft("30s", "s1")).record
    assert store.remember(a, draft("30 sec", "s2")).action == "corroborated"
    new = store.remember(a, draft("60s", "s3"))
    assert new.action == "superseded" and store.get(a, old.id).superseded_by == new.record.id
    with pytest.raises(RecordNotFoundError):
        store.get(b, old.id)
    secret = "Quartzberg account uses a private replica"
    gone = store.remember(a, RecordDraft("note", secret, entity="quartzberg", attribute="replica",
                                         provenance=Provenance(session_id="s4"))).record
    store.forget(a, gone.id, reason="erasure")
    with store.engine.connect() as conn:
        for table in ("events", "payloads", "records"):
            dump = conn.execute(text(f'SELECT string_agg(t::text, \'|\') FROM "{schema}".baton_mem_{table} t')).scalar_one()
            assert "Quartzberg" not in (dump or "")
    run_decay(a, now=store.clock() + 200 * 86400)
    assert store.verify(a).ok and store.check_projection(a) == []
    before = store.list_records(a, active_only=False)
    assert store.rebuild(a).differences_before == []
    assert store.list_records(a, active_only=False) == before
    with pytest.raises(StaleVersionError):
        store.append_events(a, [NewEvent("cfg", "cfg.set", {"v": 1}, expected_version=3)])
    assert compile_bundle(a, "warehouse timeout").lock.journal_seq == store.head_seq(a)


def test_postgres_concurrent_writers_keep_one_chain(pg_store):
    store, _ = pg_store
    scope = store.open(Principal("acme"))
    errors: list[BaseException] = []

    def writer(n):
        try:
            for i in range(15):
                store.remember(scope, RecordDraft("note", f"writer {n} fact {i}", entity=f"w{n}", attribute=f"f{i}",
                                                  provenance=Provenance(session_id=f"w{n}")))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    report = store.verify(scope)
    assert report.ok and report.events == 60
    assert store.check_projection(scope) == []
