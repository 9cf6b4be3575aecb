"""Opening a new SQLite file while another process writes its first tables (``baton.sqlite_wal``).

SQLite answers a switch to WAL with ``SQLITE_BUSY`` at once, without its busy handler, while
another connection holds the write lock under the old journal: two ``baton serve`` processes
on one empty home met it (CI: "database is locked" at start-up). The state engine and the
knowledge index try again within their busy timeout."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from sqlalchemy.exc import OperationalError

from baton.memory.engine import make_engine
from baton.specialists.knowledge.sqlite_store import SQLiteDatabase


def _writer_holding_the_lock(path) -> sqlite3.Connection:
    """Another process's first write on a new file: the write lock held, the file still in rollback-journal mode."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE first_tables (x)")
    return holder


def test_the_switch_to_wal_waits_for_the_other_writer(tmp_path):
    path = tmp_path / "state.sqlite"
    holder = _writer_holding_the_lock(path)
    bare = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # what SQLite does without the retry
        bare.execute("PRAGMA busy_timeout=5000").execute("PRAGMA journal_mode=WAL")
    bare.close()
    release = threading.Timer(0.3, holder.execute, args=("COMMIT",))
    release.start()
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("SELECT count(*) FROM first_tables").scalar() == 0  # the other's tables are there
    finally:
        release.join()
        engine.dispose()
        holder.close()


def test_a_lock_held_past_the_busy_timeout_is_a_typed_error(tmp_path):
    path = tmp_path / "state.sqlite"
    holder = _writer_holding_the_lock(path)
    engine = make_engine(f"sqlite:///{path}", busy_timeout_ms=200)
    try:
        with pytest.raises(OperationalError, match="locked"), engine.connect():
            pass
    finally:
        engine.dispose()
        holder.execute("ROLLBACK")
        holder.close()


def test_a_knowledge_index_opened_beside_another_writer_waits_for_it(tmp_path):
    path = tmp_path / "index.sqlite"
    holder = _writer_holding_the_lock(path)
    release = threading.Timer(0.3, holder.execute, args=("COMMIT",))
    release.start()
    try:
        index = SQLiteDatabase(path)
        assert index.call(lambda conn: conn.execute("PRAGMA journal_mode").fetchone()[0]) == "wal"
    finally:
        release.join()
        holder.close()
