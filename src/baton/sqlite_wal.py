"""Switching a SQLite file to WAL when another process may be opening it too.

WAL is a lasting property of the file: once switched, the switch is a no-op. Two processes
opening one new file at once (``baton serve`` twice on an empty home, two replicas on one
knowledge index) race: while one writes its first tables under the old journal, the other's
switch needs the file to itself, and SQLite answers it ``SQLITE_BUSY`` at once, without the
busy handler (waiting there could deadlock). So the switch is tried again, in growing
pauses, for as long as the caller's busy timeout allows; past it, SQLite's own error.
"""

from __future__ import annotations

import sqlite3
import time

FIRST_PAUSE_S = 0.005
LONGEST_PAUSE_S = 0.1


def write_ahead_log(conn: sqlite3.Connection | sqlite3.Cursor, wait_s: float) -> None:
    """Put ``conn``'s file in WAL mode, waiting up to ``wait_s`` for another writer (module docstring)."""
    deadline = time.monotonic() + wait_s
    pause = FIRST_PAUSE_S
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(LONGEST_PAUSE_S, pause * 2)
