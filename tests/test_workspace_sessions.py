"""Conversations on SQLite and PostgreSQL: versioned tables, old embedded files kept, and a
session shared by processes (turn numbers never collide)."""

import asyncio
import sqlite3

import pytest
import sqlalchemy as sa

from baton.response import AIMessage
from baton.state import SessionNotFound, SessionStore
from baton.state.migrations import Migration, StateSchemaError, migrate

OLD_SCHEMA = """
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, workspace TEXT NOT NULL, title TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE turns (session_id TEXT NOT NULL REFERENCES sessions(session_id), seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL UNIQUE, question TEXT NOT NULL, answer TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, seq));
CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at);
CREATE TABLE feedback (turn_id TEXT NOT NULL REFERENCES turns(turn_id), thumbs TEXT, verdict TEXT, comment TEXT,
    created_at TEXT NOT NULL);
"""


async def test_an_embedded_file_from_before_the_migrations_keeps_its_conversations(tmp_path):
    path = tmp_path / "sessions.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
        db.execute("INSERT INTO sessions VALUES ('s1', 'demo', 'Old question', '2025-01-01', '2025-01-01')")
        db.execute("INSERT INTO turns VALUES ('s1', 1, 't1', 'Old question', ?, '2025-01-01')", (AIMessage(content="old").to_json(),))
    store = SessionStore(path)
    try:
        assert [t.answer.content for t in await store.turns("demo", "s1")] == ["old"]
        await store.append("demo", "s1", "New question", AIMessage(content="new"))
        assert [t.seq for t in await store.turns("demo", "s1")] == [1, 2]
    finally:
        store.close()
    store = SessionStore(path)  # reopening migrates nothing more
    store.close()


def test_a_database_newer_than_this_code_is_refused(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'x.sqlite'}")
    migrate(engine, "thing", [Migration(1, "one", lambda c: None), Migration(2, "two", lambda c: None)])
    with pytest.raises(StateSchemaError, match="upgrade Baton"):
        migrate(engine, "thing", [Migration(1, "one", lambda c: None)])
    engine.dispose()


async def test_a_closed_store_refuses_work():
    store = SessionStore()
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        await store.create("demo")


@pytest.mark.postgres
async def test_two_stores_on_one_postgres_share_sessions_and_never_collide(state_db):
    first, second = SessionStore(state_db), SessionStore(state_db)  # as two replicas would
    try:
        session = await first.create("acme", "Sales?")
        answers = [AIMessage(content=f"answer {i}") for i in range(12)]
        await asyncio.gather(*((first if i % 2 else second).append("acme", session, f"q{i}", a) for i, a in enumerate(answers)))
        turns = await second.turns("acme", session)
        assert [t.seq for t in turns] == list(range(1, 13))
        assert {t.answer.turn_id for t in turns} == {a.turn_id for a in answers}
        with pytest.raises(SessionNotFound):
            await second.turns("globex", session)
        found = await second.find_reply("acme", "answer 3")
        assert found is not None and found[0] == session and found[1].content == "answer 3"
        assert await second.find_reply("globex", "answer 3") is None
    finally:
        first.close()
        second.close()
