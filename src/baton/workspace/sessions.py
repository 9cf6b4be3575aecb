"""Conversations: a session keeps its turns, persisted with the workspace.

One SQLite file per workspace (``sessions.sqlite`` in the workspace directory, or
``:memory:`` for tests). Every read and write names the workspace, so a session id from
another workspace is simply not found. Calls run in a worker thread: SQLite is fast enough
that a lock around one connection is simpler and quicker than a pool.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from baton.errors import BatonError
from baton.messages import Message
from baton.response import AIMessage

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY, workspace TEXT NOT NULL, title TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL REFERENCES sessions(session_id), seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL UNIQUE, question TEXT NOT NULL, answer TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, seq));
CREATE INDEX IF NOT EXISTS sessions_by_workspace ON sessions (workspace, updated_at);
CREATE TABLE IF NOT EXISTS feedback (
    turn_id TEXT NOT NULL REFERENCES turns(turn_id), thumbs TEXT, verdict TEXT, comment TEXT, created_at TEXT NOT NULL);
"""
TITLE_LENGTH = 80


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session_id: str
    title: str
    created_at: str
    updated_at: str
    turns: int


@dataclass(frozen=True, slots=True)
class Turn:
    seq: int
    question: str
    answer: AIMessage


class SessionNotFound(BatonError, LookupError):
    """No such session in the caller's workspace (it may exist in another: we don't say)."""


def history_of(turns: list[Turn], max_turns: int = 10) -> list[Message]:
    """Turns as chat messages (the SQL behind an answer included, for follow-ups)."""
    out: list[Message] = []
    for turn in turns[-max_turns:]:
        out.append(Message.user(turn.question))
        text = turn.answer.content
        if turn.answer.query:
            text += f"\n(SQL used: {turn.answer.query})"
        out.append(Message.assistant(text))
    return out


class SessionStore:
    def __init__(self, path: str | Path = ":memory:") -> None:
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    async def _run(self, fn, *args):
        return await asyncio.to_thread(self._locked, fn, *args)

    def _locked(self, fn, *args):
        with self._lock:
            return fn(*args)

    # --- API --------------------------------------------------------------------------------

    async def create(self, workspace: str, title: str = "New conversation") -> str:
        return await self._run(self._create, workspace, title)

    async def append(self, workspace: str, session_id: str | None, question: str, answer: AIMessage) -> str:
        """Append a turn (creating the session when ``session_id`` is None); returns the id."""
        return await self._run(self._append, workspace, session_id, question, answer)

    async def list(self, workspace: str, limit: int = 50) -> list[SessionSummary]:
        return await self._run(self._list, workspace, limit)

    async def turns(self, workspace: str, session_id: str) -> list[Turn]:
        return await self._run(self._turns, workspace, session_id)

    async def history(self, workspace: str, session_id: str, max_turns: int = 10) -> list[Message]:
        """The last turns as chat messages, for the next question's context."""
        return history_of(await self.turns(workspace, session_id), max_turns)

    async def exists(self, workspace: str, session_id: str) -> bool:
        try:
            await self._run(self._owned, workspace, session_id)
        except SessionNotFound:
            return False
        return True

    async def find_turn(self, workspace: str, turn_id: str) -> tuple[str, str, AIMessage] | None:
        """(session id, question, answer) of a turn of this workspace, or None."""
        return await self._run(self._find_turn, workspace, turn_id)

    async def add_feedback(self, workspace: str, turn_id: str, thumbs: str | None, verdict: str | None, comment: str | None) -> None:
        await self._run(self._add_feedback, workspace, turn_id, thumbs, verdict, comment)

    # --- in the worker thread ---------------------------------------------------------------

    def _create(self, workspace: str, title: str) -> str:
        session_id = uuid.uuid4().hex
        now = _now()
        self._db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?)", (session_id, workspace, title[:TITLE_LENGTH], now, now))
        return session_id

    def _owned(self, workspace: str, session_id: str) -> None:
        row = self._db.execute("SELECT 1 FROM sessions WHERE session_id = ? AND workspace = ?", (session_id, workspace)).fetchone()
        if row is None:
            raise SessionNotFound(session_id)

    def _append(self, workspace: str, session_id: str | None, question: str, answer: AIMessage) -> str:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if session_id is None:
                session_id = self._create(workspace, question)
            else:
                self._owned(workspace, session_id)
            seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE session_id = ?", (session_id,)).fetchone()[0]
            now = _now()
            self._db.execute("INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)", (session_id, seq, answer.turn_id, question, answer.to_json(), now))
            self._db.execute("UPDATE sessions SET updated_at = ? WHERE session_id = ?", (now, session_id))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return session_id

    def _find_turn(self, workspace: str, turn_id: str) -> tuple[str, str, AIMessage] | None:
        row = self._db.execute(
            "SELECT t.session_id, t.question, t.answer FROM turns t JOIN sessions s ON s.session_id = t.session_id "
            "WHERE t.turn_id = ? AND s.workspace = ?", (turn_id, workspace)).fetchone()
        return (row[0], row[1], AIMessage.from_json(row[2])) if row else None

    def _add_feedback(self, workspace: str, turn_id: str, thumbs: str | None, verdict: str | None, comment: str | None) -> None:
        if self._find_turn(workspace, turn_id) is None:
            raise SessionNotFound(turn_id)
        self._db.execute("INSERT INTO feedback VALUES (?, ?, ?, ?, ?)", (turn_id, thumbs, verdict, comment, _now()))

    def _list(self, workspace: str, limit: int) -> list[SessionSummary]:
        rows = self._db.execute(
            "SELECT s.session_id, s.title, s.created_at, s.updated_at, COUNT(t.seq) FROM sessions s "
            "LEFT JOIN turns t ON t.session_id = s.session_id WHERE s.workspace = ? "
            "GROUP BY s.session_id ORDER BY s.updated_at DESC LIMIT ?",
            (workspace, limit),
        ).fetchall()
        return [SessionSummary(*row) for row in rows]

    def _turns(self, workspace: str, session_id: str) -> list[Turn]:
        self._owned(workspace, session_id)
        rows = self._db.execute("SELECT seq, question, answer FROM turns WHERE session_id = ? ORDER BY seq", (session_id,)).fetchall()
        return [Turn(seq, question, AIMessage.from_json(answer)) for seq, question, answer in rows]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()
