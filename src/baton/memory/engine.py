"""Engines for the memory store.

SQLite (the embedded default) is opened so that the journal is safe and erasure is real:
WAL (readers never block the writer), ``synchronous=NORMAL`` (a commit survives a process
crash; an OS crash may lose the last commits but never corrupts), ``secure_delete=ON``
(deleted payload bytes are zeroed, not left in free pages), a 30 s busy timeout, and
pysqlite's own transaction handling switched off so a write transaction starts with
``BEGIN IMMEDIATE`` (taking the write lock up front: no deadlock between two readers that
both want to upgrade). In-memory databases share one connection (``StaticPool``).
"""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

BUSY_TIMEOUT_MS = 30000


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        return sqlite_engine(url)
    return create_engine(url, pool_pre_ping=True)


def sqlite_engine(url: str) -> Engine:
    memory = url in ("sqlite://", "sqlite:///:memory:")
    if not memory:
        path = url.split("///", 1)[-1]
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": 30}}
    if memory:
        kwargs["poolclass"] = StaticPool
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        for pragma in ("secure_delete=ON", f"busy_timeout={BUSY_TIMEOUT_MS}", "synchronous=NORMAL") + (() if memory else ("journal_mode=WAL",)):
            cur.execute(f"PRAGMA {pragma}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("baton_write") else "BEGIN")

    return engine
