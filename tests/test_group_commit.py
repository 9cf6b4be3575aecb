"""Group commit (``baton.state.group_commit``) and the conversation store's turns appended
through it: turns that arrive together share a transaction, each caller gets its own turn's
result, and a turn that fails on its own fails alone; on real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from baton.response import AIMessage
from baton.state import SessionNotFound, SessionStore
from baton.state import sessions as sessions_module
from baton.state.driver_writes import execute_rows
from baton.state.group_commit import GroupCommit


def counted_commits(store: SessionStore) -> list[int]:
    commits: list[int] = []
    sa.event.listen(store.engine, "commit", lambda conn: commits.append(1))
    return commits


async def test_turns_appended_together_share_transactions_and_keep_their_order(tmp_path):
    store = SessionStore(tmp_path / "sessions.sqlite")
    try:
        sessions = [await store.create("acme", f"conversation {n}") for n in range(4)]
        commits = counted_commits(store)
        answers = [AIMessage(content=f"answer {i}") for i in range(40)]
        ids = await asyncio.gather(*(store.append("acme", sessions[i % 4], f"q{i}", a) for i, a in enumerate(answers)))
        assert ids == [sessions[i % 4] for i in range(40)]  # each caller got its own turn's session
        for n, session in enumerate(sessions):
            turns = await store.turns("acme", session)
            assert [t.seq for t in turns] == list(range(1, 11))
            assert [t.question for t in turns] == [f"q{i}" for i in range(n, 40, 4)]  # in the order they were asked
        assert 1 <= len(commits) < 40  # grouped: fewer transactions than turns
    finally:
        store.close()


async def test_a_group_writes_each_table_once_whatever_its_size(tmp_path, monkeypatch):
    """A group's new sessions, turns and reply digests are one statement each (an executemany,
    ``driver_writes.execute_rows``), so a group costs about one turn's round trips over a slow
    network, not one per turn."""
    store = SessionStore(tmp_path / "sessions.sqlite")
    try:
        await store.append("acme", None, "warm", AIMessage(content="warm"))
        commits = counted_commits(store)
        inserts: list[str] = []

        def counted(conn, statement, rows):
            inserts.append(statement.table.name)
            execute_rows(conn, statement, rows)

        monkeypatch.setattr(sessions_module, "execute_rows", counted)
        ids = await asyncio.gather(*(store.append("acme", None, f"q{i}", AIMessage(content=f"a{i}")) for i in range(12)))
        assert len(set(ids)) == 12  # twelve new conversations
        for table in ("baton_sessions", "baton_turns", "baton_replies"):
            assert inserts.count(table) == len(commits), inserts  # once per transaction, not once per turn
        assert len(commits) < 12
    finally:
        store.close()


async def test_a_turn_for_an_unknown_session_fails_alone_and_its_group_is_written(tmp_path):
    store = SessionStore(tmp_path / "sessions.sqlite")
    try:
        session = await store.create("acme", "Sales?")
        other = await store.create("globex", "Not yours")
        results = await asyncio.gather(
            store.append("acme", session, "first", AIMessage(content="one")),
            store.append("acme", "no-such-session", "lost", AIMessage(content="x")),
            store.append("acme", other, "another workspace's", AIMessage(content="y")),
            store.append("acme", None, "a new conversation", AIMessage(content="two")),
            return_exceptions=True)
        assert results[0] == session and isinstance(results[1], SessionNotFound) and isinstance(results[2], SessionNotFound)
        assert [t.question for t in await store.turns("acme", results[3])] == ["a new conversation"]
        assert [t.question for t in await store.turns("acme", session)] == ["first"]
        assert await store.turns("globex", other) == []  # nothing written into another workspace's conversation
    finally:
        store.close()


async def test_a_group_that_fails_as_a_whole_fails_each_caller_and_the_next_group_runs():
    calls: list[list[int]] = []

    async def commit(items: list[int]) -> list[int | BaseException]:
        calls.append(items)
        await asyncio.sleep(0.01)
        if 13 in items:
            raise ConnectionError("store down")
        return [item * 2 if item != 7 else ValueError("seven") for item in items]

    group: GroupCommit[int, int] = GroupCommit(commit)
    first = asyncio.ensure_future(group.submit(1))
    await asyncio.sleep(0)  # the first group (1) is being committed: the next ones wait together
    rest = await asyncio.gather(*(group.submit(n) for n in (7, 13, 4)), return_exceptions=True)
    assert await first == 2
    assert calls == [[1], [7, 13, 4]]
    assert all(isinstance(r, ConnectionError) for r in rest)  # 13 broke the whole group
    assert await group.submit(5) == 10  # and the next group runs
    with pytest.raises(ValueError, match="seven"):
        await group.submit(7)  # an item's own failure reaches its caller alone


async def test_a_cancelled_caller_does_not_disturb_its_group():
    release = asyncio.Event()

    async def commit(items: list[int]) -> list[int | BaseException]:
        await release.wait()
        return list(items)

    group: GroupCommit[int, int] = GroupCommit(commit)
    kept, dropped = asyncio.ensure_future(group.submit(1)), asyncio.ensure_future(group.submit(2))
    await asyncio.sleep(0)
    dropped.cancel()
    release.set()
    assert await kept == 1 and dropped.cancelled()


@pytest.mark.postgres
async def test_two_replicas_appending_to_the_same_sessions_in_opposite_orders_never_deadlock(state_db):
    first, second = SessionStore(state_db), SessionStore(state_db)
    try:
        a, b = await first.create("acme", "A"), await first.create("acme", "B")
        plan = [(first, a if i % 2 else b) for i in range(20)] + [(second, b if i % 2 else a) for i in range(20)]
        await asyncio.wait_for(asyncio.gather(*(store.append("acme", session, f"q{i}", AIMessage(content=str(i)))
                                                for i, (store, session) in enumerate(plan))), 30)
        for session in (a, b):
            assert [t.seq for t in await second.turns("acme", session)] == list(range(1, 21))
    finally:
        first.close()
        second.close()
