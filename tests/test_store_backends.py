"""The backends of Baton's own state (``baton.store_backends``): looked up by dialect and by
URL from the units themselves, any other database refused, and what each unit decides is what
the stores used to decide by comparing names (the same SQL, the same column types)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from baton.memory.schema import build_tables
from baton.store_backends import (
    BACKENDS,
    POSTGRESQL,
    SQLITE,
    UnsupportedStoreBackend,
    backend_for_url,
    backend_named,
    backend_of,
    serial_integer,
    url_backend,
)


def test_each_backend_is_found_by_its_dialect_and_its_urls():
    assert [b.name for b in BACKENDS] == ["sqlite", "postgresql"]
    assert backend_of(sa.create_engine("sqlite://")) is SQLITE
    assert backend_named("postgresql") is POSTGRESQL
    for url, backend in (("sqlite:///x.db", SQLITE), ("sqlite://", SQLITE), ("postgresql://u@h/db", POSTGRESQL),
                         ("postgres://u@h/db", POSTGRESQL), ("postgresql+psycopg://u@h/db", POSTGRESQL)):
        assert backend_for_url(url) is backend, url
    for url in ("mysql+pymysql://u@h/db", "duckdb:///x.duckdb", "redis://h:6379/0", "not a url", "postgresql://h:port/db"):
        assert backend_for_url(url) is None, url


def test_any_other_database_is_refused_by_name():
    with pytest.raises(UnsupportedStoreBackend, match="sqlite or postgresql, not 'mysql'"):
        backend_named("mysql")
    with pytest.raises(UnsupportedStoreBackend, match="'duckdb' is neither"):
        url_backend("duckdb:///x.duckdb")


def test_urls_get_the_driver_baton_installs():
    url = sa.make_url("postgres://u:secret@h/db")
    assert POSTGRESQL.driver_url(url).render_as_string(hide_password=False) == "postgresql+psycopg://u:secret@h/db"
    assert SQLITE.driver_url(sa.make_url("sqlite:///x.db")) == sa.make_url("sqlite:///x.db")
    assert SQLITE.read_only_url("sqlite:////tmp/p.sqlite") == "sqlite:///file:/tmp/p.sqlite?mode=ro&uri=true"
    assert POSTGRESQL.read_only_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert SQLITE.in_memory(sa.make_url("sqlite://")) and not SQLITE.in_memory(sa.make_url("sqlite:///x.db"))
    assert POSTGRESQL.timeout_args(5, 15) == {"connect_timeout": 5, "options": "-c statement_timeout=15000"}


def test_the_serial_key_is_bigint_except_on_sqlite():
    table = sa.Table("t", sa.MetaData(), sa.Column("seq", serial_integer(), primary_key=True, autoincrement=True))
    ddl = {b.name: str(sa.schema.CreateTable(table).compile(dialect=_dialect(b.name))) for b in BACKENDS}
    assert "seq INTEGER NOT NULL" in ddl["sqlite"]
    assert "seq BIGSERIAL NOT NULL" in ddl["postgresql"]


def test_the_upsert_and_the_locks_compile_for_their_dialect():
    table = sa.Table("k", sa.MetaData(), sa.Column("a", sa.String, primary_key=True), sa.Column("b", sa.String))
    for backend in BACKENDS:
        insert = backend.upsert(table)
        statement = insert.values(a="x", b="y").on_conflict_do_update(index_elements=[table.c.a], set_={"b": insert.excluded.b})
        assert "ON CONFLICT (a) DO UPDATE SET b = excluded.b" in str(statement.compile(dialect=_dialect(backend.name)))


def test_sqlite_installs_the_journal_guards_and_takes_no_lock(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'm.sqlite'}")
    tables = build_tables()
    with engine.begin() as conn:
        SQLITE.transaction_lock(conn, "anything")  # the write transaction is the lock: nothing to run
        tables.metadata.create_all(conn)
        SQLITE.install_journal_guards(conn, tables, "record.forgotten")
        triggers = {row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert triggers == {"baton_mem_events_no_update", "baton_mem_events_no_delete", "baton_mem_payloads_no_update",
                        "baton_mem_payloads_delete_needs_tombstone"}
    engine.dispose()


def _dialect(name: str) -> sa.engine.Dialect:
    from sqlalchemy.dialects import registry

    return registry.load(name)()
