"""The tables of conversations (``sessions.py``) and their versioned migrations.

``baton_sessions`` / ``baton_turns`` / ``baton_feedback`` / ``baton_replies`` since version 1;
``baton_turn_keys`` (``turn_keys.py``: a turn's idempotency key, unique per workspace) since
version 2. A SQLite file from before the migrations (tables ``sessions``/``turns``/``feedback``)
is renamed in place: its conversations are kept.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from baton.state.migrations import Migration
from baton.state.turn_keys import TURN_KEYS
from baton.store_backends import backend_of

_md = sa.MetaData()
SESSIONS = sa.Table(
    "baton_sessions", _md,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("workspace", sa.String(200), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
    sa.Index("baton_sessions_by_workspace", "workspace", "updated_at"),
)
TURNS = sa.Table(
    "baton_turns", _md,
    sa.Column("session_id", sa.String(64), sa.ForeignKey("baton_sessions.session_id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("turn_id", sa.String(64), nullable=False, unique=True),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
)
FEEDBACK = sa.Table(
    "baton_feedback", _md,
    sa.Column("turn_id", sa.String(64), sa.ForeignKey("baton_turns.turn_id"), nullable=False, index=True),
    sa.Column("thumbs", sa.String(10)),
    sa.Column("verdict", sa.String(20)),
    sa.Column("comment", sa.Text),
    sa.Column("created_at", sa.String(40), nullable=False),
)
REPLIES = sa.Table(
    "baton_replies", _md,
    sa.Column("workspace", sa.String(200), primary_key=True),
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("turn_id", sa.String(64), primary_key=True),
    sa.Column("created_at", sa.String(40), nullable=False),
)
_LEGACY = {"sessions": "baton_sessions", "turns": "baton_turns", "feedback": "baton_feedback"}


def _create_v1(conn: Connection) -> None:
    names = set(sa.inspect(conn).get_table_names())
    if backend_of(conn).embedded and "sessions" in names and "baton_sessions" not in names:
        for old, new in _LEGACY.items():  # an embedded file from before the migrations: keep its conversations
            conn.exec_driver_sql(f'ALTER TABLE "{old}" RENAME TO "{new}"')
    for table in (SESSIONS, TURNS, FEEDBACK, REPLIES):
        table.create(conn, checkfirst=True)


def _create_v2(conn: Connection) -> None:
    TURN_KEYS.create(conn, checkfirst=True)


MIGRATIONS = [Migration(1, "sessions, turns, feedback and reply digests", _create_v1),
              Migration(2, "idempotency keys of turns, unique per workspace", _create_v2)]
