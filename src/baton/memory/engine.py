"""Engines for the memory store.

SQLite (the embedded default) is opened so that the journal is safe and erasure is real:
WAL (readers never block the writer), ``synchronous=NORMAL`` (a commit survives a process
crash; an OS crash may lose the last commits but never corrupts), ``secure_delete=ON``
(deleted payload bytes are zeroed, not left in free pages), a 30 s busy timeout, and
pysqlite's own transaction handling switched off so a write transaction starts with
``BEGIN IMMEDIATE`` (taking the write lock up front: no deadlock between two readers that
both want to upgrade). In-memory databases share one connection (``StaticPool``).

PostgreSQL connections get a connect timeout (``BATON_STATE_CONNECT_TIMEOUT``, default 5 s)
and a statement timeout (``BATON_STATE_STATEMENT_TIMEOUT``, default 15 s), and a pool
checkout waits at most the connect timeout: a dead or frozen state database fails a call
in seconds instead of holding a thread for minutes (given, or ``Settings.from_env()``'s when
not). ``busy_timeout_ms`` overrides SQLite's
busy timeout for a store that prefers failing fast (conversations: 5 s).
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import StaticPool

from baton.settings import Settings
from baton.sqlite_wal import write_ahead_log
from baton.store_backends import backend_for_url

BUSY_TIMEOUT_MS = 30000


def make_engine(url: str, *, busy_timeout_ms: int | None = None, connect_timeout_s: float | None = None,
                statement_timeout_s: float | None = None) -> Engine:
    backend = backend_for_url(url)
    if backend is None:  # not a state backend (a test's own database): opened plainly
        return create_engine(url, pool_pre_ping=True)
    if backend.embedded:
        return sqlite_engine(url, busy_timeout_ms=busy_timeout_ms)
    if connect_timeout_s is None or statement_timeout_s is None:
        settings = Settings.from_env()
        connect_timeout_s = connect_timeout_s or settings.state_connect_timeout_s
        statement_timeout_s = statement_timeout_s or settings.state_statement_timeout_s
    connect, statement = connect_timeout_s, statement_timeout_s
    return create_engine(url, pool_pre_ping=True, pool_timeout=connect, connect_args=backend.timeout_args(connect, statement))


def sqlite_engine(url: str, *, busy_timeout_ms: int | None = None) -> Engine:
    memory = url in ("sqlite://", "sqlite:///:memory:")
    if not memory:
        path = url.split("///", 1)[-1]
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    busy = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": busy / 1000}}
    if memory:
        kwargs["poolclass"] = StaticPool
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        for pragma in ("secure_delete=ON", f"busy_timeout={busy}", "synchronous=NORMAL"):
            cur.execute(f"PRAGMA {pragma}")
        if not memory:
            write_ahead_log(cur, busy / 1000)
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        _begin(conn, "BEGIN IMMEDIATE" if conn.get_execution_options().get("baton_write") else "BEGIN")

    return engine


def _begin(conn: Connection, statement: str) -> None:
    """``statement`` on the driver's connection itself: through ``exec_driver_sql`` (its
    events, execution context and result) it was most of a BEGIN's cost, on every
    transaction of every store. A failure (a lock not had within the busy timeout) is
    SQLAlchemy's typed error, as from any other statement."""
    try:
        conn.connection.driver_connection.execute(statement)  # type: ignore[union-attr]
    except sqlite3.Error as exc:
        raise DBAPIError.instance(statement, (), exc, sqlite3.Error) from exc
