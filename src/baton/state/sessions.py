"""Conversations: a session keeps its turns, on SQLite (embedded) or PostgreSQL (replicas).

``SessionStore(target)``: a SQLite file path (one per workspace, the embedded default),
``":memory:"`` for tests, or a database URL (``postgresql+psycopg://...``) shared by every
workspace and every replica. Every read and write names the workspace, so a session id from
another workspace is simply not found, whoever created it and wherever.

Tables (``baton_sessions``, ``baton_turns``, ``baton_feedback``, ``baton_replies``) are
created and upgraded by versioned migrations (``session_tables.py``, ``migrations.py``), safe when several
processes open the same database at once. A SQLite file from before the migrations (tables
``sessions``/``turns``/``feedback``) is renamed in place: its conversations are kept.

Appending a turn locks the session in its transaction (``SELECT ... FOR UPDATE`` on
PostgreSQL, the write lock on SQLite), so two replicas appending to one conversation at the
same moment get consecutive turn numbers, never a collision. Turns appended while another
group commits share the next transaction (``group_commit.py``); each caller returns once
its turn is committed.

``baton_replies`` maps the digest of each answer's Markdown (what a chat client shows and
sends back as the assistant's message) to its turn: a chat client that keeps the
conversation itself can continue it (a follow-up such as "Show this as a pie chart" finds
the answer it refers to) without knowing any session id.

``baton_turn_keys`` makes turns idempotent (``turn_keys.py``): a turn appended with a key
claims it in the same transaction; a key already held is not claimed again, that turn is
not stored and its caller gets ``TurnKeyTaken`` naming the stored one (the rest of its
group commits). A late commit of a write that timed out and its keyed retry store one turn.

Calls run in the store's own bulkhead (``bulkheads.Bulkhead``: its own threads, a bounded
queue, ``timeout_s`` per call, a breaker): a slow or locked database stalls conversations,
not every other thread, and fails a call with ``DependencyUnavailable`` in seconds. A SQLite
file waits at most ``BUSY_TIMEOUT_MS`` for another writer. ``close()`` shuts it down.
"""

from __future__ import annotations

import builtins  # SessionStore.list shadows list in the class body: annotations after it say builtins.list
import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from baton.ids import random_hex
from baton.messages import Message
from baton.response import AIMessage
from baton.state.bulkheads import Bulkhead
from baton.state.conversations import SessionNotFound, SessionSummary, Turn, history_of, reply_digest
from baton.state.driver_writes import execute_rows
from baton.state.group_commit import GroupCommit
from baton.state.migrations import migrate
from baton.state.session_tables import FEEDBACK, MIGRATIONS, REPLIES, SESSIONS, TURNS
from baton.state.turn_keys import KEY_RETENTION_S, TURN_KEYS, TurnKeyTaken, claim
from baton.store_backends import backend_of

TITLE_LENGTH = 80
MAX_THREADS = 4
TIMEOUT_S = 5.0
BUSY_TIMEOUT_MS = 5000
T = TypeVar("T")
KEY_PRUNE_EVERY = 1000  # groups committed between two deletions of expired turn keys
# one turn to append: workspace, session id, question, answer, reply digest, new, answer JSON, key, key expiry
_Append = tuple[str, str, str, AIMessage, str, bool, "str | None", "str | None", str]


def _engine_for(target: str | Path | Engine) -> Engine:
    from baton.memory.engine import make_engine

    if isinstance(target, Engine):
        return target
    text = str(target)
    if "://" in text:
        return make_engine(text)
    return make_engine("sqlite://" if text == ":memory:" else f"sqlite:///{Path(text).resolve()}", busy_timeout_ms=BUSY_TIMEOUT_MS)


class SessionStore:
    def __init__(self, target: str | Path | Engine = ":memory:", *, max_threads: int = MAX_THREADS,
                 timeout_s: float = TIMEOUT_S) -> None:
        self.engine = _engine_for(target)
        self._owns_engine = not isinstance(target, Engine)
        backend = backend_of(self.engine)
        self._single = backend.in_memory(self.engine.url)
        self._lock = threading.Lock()  # an in-memory database is one connection: one user at a time
        # A SQLite file has one writer at a time: this process's writers take turns here (see _write)
        self._write_lock = threading.Lock() if backend.single_writer and not self._single else None
        migrate(self.engine, "sessions", MIGRATIONS)
        self.bulkhead = Bulkhead("sessions", threads=max_threads, queue=64, timeout_s=timeout_s)
        self._appends: GroupCommit[_Append, str] = GroupCommit(lambda group: self._run(self._append_group, group))
        self._groups = 0
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.bulkhead.close()
        if self._owns_engine:
            self.engine.dispose()

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise RuntimeError("this session store is closed")
        return await self.bulkhead.run(self._call, fn, args)

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        if self._single:
            with self._lock:
                return fn(*args)
        return fn(*args)

    @contextlib.contextmanager
    def _write(self) -> Iterator[Connection]:
        """A connection for one write transaction. On a SQLite file this process's writers
        queue on a lock first: SQLite makes a writer that finds the file locked sleep in
        growing steps (up to 100 ms each) before it tries again, which under load cost
        hundreds of milliseconds per turn; a lock hands the turn to the next writer at once.
        Other processes' writers still meet the busy timeout."""
        with self._write_lock or contextlib.nullcontext(), self.engine.connect().execution_options(baton_write=True) as conn:
            yield conn

    # --- API --------------------------------------------------------------------------------

    async def create(self, workspace: str, title: str = "New conversation") -> str:
        return await self._run(self._create, workspace, title)

    async def append(self, workspace: str, session_id: str | None, question: str, answer: AIMessage, *, new: bool = False,
                     answer_json: str | None = None, key: str | None = None, key_ttl_s: float = KEY_RETENTION_S) -> str:
        """Append a turn (creating the session when ``session_id`` is None, or with that id
        when ``new``: one transaction for a new conversation's first turn); returns the id.
        The answer's Markdown digest is kept for chat clients (``find_reply``).
        ``answer_json``: the answer already serialised (``AIMessage.to_json``), if it was.
        ``key``: the turn's idempotency key, held for ``key_ttl_s``; ``TurnKeyTaken`` when
        a turn with that key is already stored (this one is then not stored)."""
        from baton.answer_markdown import to_markdown

        if session_id is None:
            session_id, new = self.new_id(), True
        expires = _now(key_ttl_s) if key is not None else ""
        return await self._appends.submit((workspace, session_id, question, answer, reply_digest(to_markdown(answer)),
                                           new, answer_json, key, expires))

    async def find_key(self, workspace: str, key: str) -> tuple[str, str, AIMessage] | None:
        """(session id, question, answer) of the turn stored with ``key``, while the key is held."""
        return await self._run(self._find_key, workspace, key)

    @staticmethod
    def new_id() -> str:
        """An id for a conversation whose first turn ``append(..., new=True)`` will create."""
        return random_hex()

    async def list(self, workspace: str, limit: int | None = 50) -> list[SessionSummary]:
        """The newest ``limit`` conversations (None: every one)."""
        return await self._run(self._list, workspace, limit)

    async def count(self, workspace: str) -> int:
        """How many conversations ``workspace`` has (``baton sessions`` says so when it lists fewer)."""
        return await self._run(self._count, workspace)

    async def turns(self, workspace: str, session_id: str) -> builtins.list[Turn]:
        return await self._run(self._turns, workspace, session_id)

    async def history(self, workspace: str, session_id: str, max_turns: int = 10) -> builtins.list[Message]:
        """The last turns as chat messages, for the next question's context."""
        return history_of(await self.turns(workspace, session_id), max_turns)

    async def exists(self, workspace: str, session_id: str) -> bool:
        return await self._run(self._exists, workspace, session_id)

    async def find_turn(self, workspace: str, turn_id: str) -> tuple[str, str, AIMessage] | None:
        """(session id, question, answer) of a turn of this workspace, or None."""
        return await self._run(self._find_turn, workspace, turn_id)

    async def find_reply(self, workspace: str, text: str) -> tuple[str, AIMessage] | None:
        """(session id, answer) of this workspace's latest turn whose reply was ``text``."""
        return await self._run(self._find_reply, workspace, reply_digest(text))

    async def add_reply(self, workspace: str, turn_id: str, text: str) -> None:
        """Also know ``turn_id`` by ``text`` (a surface that showed the answer differently)."""
        await self._run(self._add_reply, workspace, turn_id, reply_digest(text))

    async def add_feedback(self, workspace: str, turn_id: str, thumbs: str | None, verdict: str | None, comment: str | None) -> None:
        await self._run(self._add_feedback, workspace, turn_id, thumbs, verdict, comment)

    # --- in the store's threads ---------------------------------------------------------------

    def _create(self, workspace: str, title: str) -> str:
        session_id = random_hex()
        with self._write() as conn, conn.begin():
            conn.execute(_INSERT_SESSION, _session_row(session_id, workspace, title, _now()))
        return session_id

    @staticmethod
    def _owned(conn: Connection, workspace: str, session_id: str, *, lock: bool = False) -> None:
        query = _OWNED_FOR_UPDATE if lock and backend_of(conn).locks_rows else _OWNED
        if conn.execute(query, {"sid": session_id, "ws": workspace}).first() is None:
            raise SessionNotFound(session_id)

    def _exists(self, workspace: str, session_id: str) -> bool:
        with self.engine.connect() as conn:
            try:
                self._owned(conn, workspace, session_id)
            except SessionNotFound:
                return False
        return True

    def _append_group(self, group: builtins.list[_Append]) -> builtins.list[str | Exception]:
        """The turns appended while the last group committed, in one transaction (group
        commit, ``group_commit.py``), sessions locked in id order so that two replicas'
        groups never wait on each other in a cycle. A turn that fails on its own (an unknown
        session, a duplicate id) fails its group: then each is written alone, and only it fails."""
        order = sorted(range(len(group)), key=lambda i: group[i][1] or "")  # stable: one session's turns keep their order
        try:
            ids = dict(zip(order, self._append_all([group[i] for i in order]), strict=True))
            return [ids[i] for i in range(len(group))]
        except (SessionNotFound, sa.exc.IntegrityError):
            if len(group) == 1:
                raise
        results: builtins.list[str | Exception] = []
        for turn in group:
            try:
                results.extend(self._append_all([turn]))
            except (SessionNotFound, sa.exc.IntegrityError) as exc:
                results.append(exc)
        return results

    def _append_all(self, turns: builtins.list[_Append]) -> builtins.list[str | Exception]:
        """``turns`` appended in one transaction, in order: their sessions' ids, or
        ``TurnKeyTaken`` for a turn whose key another turn holds (not stored). Keys are
        claimed first, in key order, then sessions locked in id order: every writer takes
        its locks in that order, so two replicas' groups never wait on each other in a cycle."""
        with self._write() as conn, conn.begin():
            self._groups += 1
            if self._groups % KEY_PRUNE_EVERY == 1:
                conn.execute(TURN_KEYS.delete().where(TURN_KEYS.c.expires_at < _now()))
            keyed = sorted((i for i, turn in enumerate(turns) if turn[7] is not None), key=lambda i: turns[i][7] or "")
            taken = {i: found for i in keyed if (found := self._claim_key(conn, turns[i])) is not None}
            stored = [i for i in range(len(turns)) if i not in taken]
            ids = dict(zip(stored, self._insert_turns(conn, [turns[i] for i in stored]), strict=True))
            return [taken[i] if i in taken else ids[i] for i in range(len(turns))]

    @staticmethod
    def _claim_key(conn: Connection, turn: _Append) -> TurnKeyTaken | None:
        return claim(conn, turn[0], turn[7] or "", turn[3].turn_id, turn[1], turn[8], _now())

    def _insert_turns(self, conn: Connection, turns: builtins.list[_Append]) -> builtins.list[str]:
        """``turns`` written in ``conn``'s transaction, in order; their sessions' ids. Each
        statement runs once for the whole group (new sessions, turns, reply digests, touched
        sessions), so a group costs about what one turn does over a slow network; only an
        existing session's lock and next number are read per session."""
        sessions: builtins.list[dict[str, Any]] = []
        rows: builtins.list[dict[str, Any]] = []
        replies: builtins.list[dict[str, Any]] = []
        touched: dict[str, str] = {}
        seqs: dict[str, int] = {}  # the last number given in this group, per session
        ids: builtins.list[str] = []
        for workspace, session_id, question, answer, digest, new, answer_json, *_ in turns:
            now = _now()
            if session_id is None or new:
                session_id = session_id or random_hex()
                sessions.append(_session_row(session_id, workspace, question, now))
                seq = 1
            elif session_id in seqs:
                seq = seqs[session_id] + 1
            else:
                self._owned(conn, workspace, session_id, lock=True)
                seq = conn.execute(_NEXT_SEQ, {"sid": session_id}).scalar_one()
            seqs[session_id] = seq
            if seq > 1:
                touched[session_id] = now
            rows.append(dict(session_id=session_id, seq=seq, turn_id=answer.turn_id, question=question,
                             answer=answer_json if answer_json is not None else answer.to_json(), created_at=now))
            replies.append(dict(workspace=workspace, digest=digest, turn_id=answer.turn_id, created_at=now))
            ids.append(session_id)
        if sessions:
            execute_rows(conn, _INSERT_SESSION, sessions)  # on SQLite's own connection (driver_writes.py)
        if rows:
            execute_rows(conn, _INSERT_TURN, rows)
            execute_rows(conn, _INSERT_REPLY, replies)
        if touched:
            conn.execute(_TOUCH, [{"sid": sid, "now": now} for sid, now in touched.items()])
        return ids

    def _find_turn(self, workspace: str, turn_id: str) -> tuple[str, str, AIMessage] | None:
        query = (sa.select(TURNS.c.session_id, TURNS.c.question, TURNS.c.answer)
                 .join(SESSIONS, SESSIONS.c.session_id == TURNS.c.session_id)
                 .where(TURNS.c.turn_id == turn_id, SESSIONS.c.workspace == workspace))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return (row[0], row[1], AIMessage.from_json(row[2])) if row else None

    def _find_key(self, workspace: str, key: str) -> tuple[str, str, AIMessage] | None:
        query = (sa.select(TURNS.c.session_id, TURNS.c.question, TURNS.c.answer)
                 .join(TURN_KEYS, TURN_KEYS.c.turn_id == TURNS.c.turn_id)
                 .where(TURN_KEYS.c.workspace == workspace, TURN_KEYS.c.turn_key == key, TURN_KEYS.c.expires_at >= _now()))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return (row[0], row[1], AIMessage.from_json(row[2])) if row else None

    def _find_reply(self, workspace: str, digest: str) -> tuple[str, AIMessage] | None:
        query = (sa.select(TURNS.c.session_id, TURNS.c.answer)
                 .join(REPLIES, REPLIES.c.turn_id == TURNS.c.turn_id)
                 .join(SESSIONS, SESSIONS.c.session_id == TURNS.c.session_id)
                 .where(REPLIES.c.workspace == workspace, REPLIES.c.digest == digest, SESSIONS.c.workspace == workspace)
                 .order_by(REPLIES.c.created_at.desc()).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return (row[0], AIMessage.from_json(row[1])) if row else None

    def _add_reply(self, workspace: str, turn_id: str, digest: str) -> None:
        if self._find_turn(workspace, turn_id) is None:
            raise SessionNotFound(turn_id)
        with self._write() as conn, conn.begin():
            known = conn.execute(sa.select(REPLIES.c.turn_id).where(
                REPLIES.c.workspace == workspace, REPLIES.c.digest == digest, REPLIES.c.turn_id == turn_id)).first()
            if known is None:
                conn.execute(REPLIES.insert().values(workspace=workspace, digest=digest, turn_id=turn_id, created_at=_now()))

    def _add_feedback(self, workspace: str, turn_id: str, thumbs: str | None, verdict: str | None, comment: str | None) -> None:
        if self._find_turn(workspace, turn_id) is None:
            raise SessionNotFound(turn_id)
        with self._write() as conn, conn.begin():
            conn.execute(FEEDBACK.insert().values(turn_id=turn_id, thumbs=thumbs, verdict=verdict, comment=comment, created_at=_now()))

    def _count(self, workspace: str) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).where(SESSIONS.c.workspace == workspace)).scalar_one())

    def _list(self, workspace: str, limit: int | None) -> builtins.list[SessionSummary]:
        count = sa.select(sa.func.count()).where(TURNS.c.session_id == SESSIONS.c.session_id).scalar_subquery()
        query = (sa.select(SESSIONS.c.session_id, SESSIONS.c.title, SESSIONS.c.created_at, SESSIONS.c.updated_at, count)
                 .where(SESSIONS.c.workspace == workspace).order_by(SESSIONS.c.updated_at.desc()).limit(limit))
        with self.engine.connect() as conn:
            return [SessionSummary(*row) for row in conn.execute(query)]

    def _turns(self, workspace: str, session_id: str) -> builtins.list[Turn]:
        with self.engine.connect() as conn:
            self._owned(conn, workspace, session_id)
            rows = conn.execute(sa.select(TURNS.c.seq, TURNS.c.question, TURNS.c.answer)
                                .where(TURNS.c.session_id == session_id).order_by(TURNS.c.seq)).all()
        return [Turn(seq, question, AIMessage.from_json(answer)) for seq, question, answer in rows]


# Statements built once: building and cache-keying Core expressions per call was most of a
# turn's CPU (issue 13); these are compiled once per engine and reused.
_OWNED = sa.select(SESSIONS.c.session_id).where(SESSIONS.c.session_id == sa.bindparam("sid"),
                                                 SESSIONS.c.workspace == sa.bindparam("ws"))
_OWNED_FOR_UPDATE = _OWNED.with_for_update()
_NEXT_SEQ = sa.select(sa.func.coalesce(sa.func.max(TURNS.c.seq), 0) + 1).where(TURNS.c.session_id == sa.bindparam("sid"))
_INSERT_SESSION = SESSIONS.insert()
_INSERT_TURN = TURNS.insert()
_INSERT_REPLY = REPLIES.insert()
_TOUCH = SESSIONS.update().where(SESSIONS.c.session_id == sa.bindparam("sid")).values(updated_at=sa.bindparam("now"))


def _session_row(session_id: str, workspace: str, title: str, now: str) -> dict[str, Any]:
    return dict(session_id=session_id, workspace=workspace, title=title[:TITLE_LENGTH], created_at=now, updated_at=now)


def _now(after_s: float = 0.0) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=after_s)).isoformat(timespec="microseconds")
