"""Database faults (freeze, drop, slow) injected by a TCP proxy between Baton and PostgreSQL:
each store's fault stays in its bulkhead, every question still ends with a typed answer,
no acknowledged turn is lost, ``/health/ready`` names what is down, and an outage is a few
log lines, not one per failure.

The workspace: memory on PostgreSQL through proxy M, conversations on PostgreSQL through
proxy S, one SQL specialist over a PostgreSQL table through proxy D and one over a local
SQLite file; every question is a verified one (no model), so what is measured is Baton.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import httpx
import pytest
import sqlalchemy as sa

from baton.agents import LexicalRouter, OrchestratorAgent
from baton.memory import MemoryStore, TrustedAuthenticator
from baton.memory import Principal as MemoryPrincipal
from baton.memory.bridge import SQLMemory
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.connection import SQLConnection
from baton.verified import VerifiedQuestion
from fault_proxy import proxied
from pg_fresh import fresh_database

KEY = {"Authorization": "Bearer key-db"}
OTHER = {"Authorization": "Bearer key-other"}
MONTHS = [(f"2025-{m:02d}", 100 + m * 3 + (400 if m == 11 else 0)) for m in range(1, 13)]
PG_QUESTION = "What was revenue by month?"
LOCAL_QUESTION = "What was local revenue by month?"


def _local_db(folder) -> str:
    path = folder / "local.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE local_sales (month TEXT, revenue INTEGER)")
        conn.executemany("INSERT INTO local_sales VALUES (?, ?)", MONTHS)
    return f"sqlite:///{path}"


def _workspace(name: str, *, sessions, memory_url: str | None, data_url: str | None, local_url: str) -> Workspace:
    verified = [VerifiedQuestion(LOCAL_QUESTION, "SELECT month, revenue FROM local_sales ORDER BY month", "local")]
    agents = [SQLAgent(SQLConnection(local_url, id="local"), name="local", verified=verified[:1])]
    memory = MemoryStore(memory_url, authenticator=TrustedAuthenticator()) if memory_url else None
    if data_url is not None:
        pg = [VerifiedQuestion(PG_QUESTION, "SELECT month, revenue FROM dbf_sales ORDER BY month", "sales")]
        port = SQLMemory(memory, memory.open(MemoryPrincipal(name)), agent="sales") if memory else None
        agents.append(SQLAgent(SQLConnection(data_url, id="pg", allow_privileged_role=True, connection_retries=0,
                                                statement_timeout_s=1.0, no_response_grace_s=0.5), name="sales",
                               memory=port, verified=pg))
        verified += pg
    orchestrator = OrchestratorAgent(f"{name}-orchestrator", model=LexicalRouter(min_score=0.0), verified=verified)
    for agent in agents:
        orchestrator.add_agent(agent)
    ws = Workspace(name, orchestrator, sessions, memory=memory)
    ws.deadline_s = 3.0
    for agent in agents:
        ws.own(agent.connection.aclose)
    return ws


@pytest.fixture
def database(postgres_url):
    with fresh_database(postgres_url, prefix="baton_faults") as url:
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE dbf_sales (month TEXT, revenue INTEGER)")
            for month, revenue in MONTHS:
                conn.exec_driver_sql(f"INSERT INTO dbf_sales VALUES ('{month}', {revenue})")
        engine.dispose()
        yield url


@pytest.fixture
def proxies(database):
    with proxied(database) as (memory, memory_url), proxied(database) as (sessions, sessions_url), \
            proxied(database) as (data, data_url):
        yield {"memory": (memory, memory_url), "sessions": (sessions, sessions_url), "data": (data, data_url)}


@pytest.fixture
async def client(proxies, tmp_path):
    local = _local_db(tmp_path)
    main = _workspace("db", sessions=SessionStore(proxies["sessions"][1], timeout_s=1.0), memory_url=proxies["memory"][1],
                      data_url=proxies["data"][1], local_url=local)
    other = _workspace("other", sessions=SessionStore(tmp_path / "other.sqlite"), memory_url=None, data_url=None, local_url=local)
    for ws in (main, other):
        for bulkhead in (*ws.bulkheads, ws.sessions.bulkhead):
            bulkhead.timeout_s, bulkhead.cooldown_s = 1.0, 1.0
    app = create_app(Workspaces([main, other]), ApiKeys({"key-db": "db", "key-other": "other"}))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=30) as c:
            c.app = app
            yield c
    for proxy, _ in proxies.values():
        proxy.set("pass")


async def ask(client, question: str, headers=KEY) -> httpx.Response:
    return await client.post("/v1/ask", json={"question": question}, headers=headers)


@pytest.mark.parametrize("fault", ["freeze", "drop"])
async def test_memory_down_answers_still_come_and_health_says_memory(client, proxies, fault, caplog):
    proxy = proxies["memory"][0]
    warm = await ask(client, LOCAL_QUESTION)
    assert warm.status_code == 200 and warm.json()["insights"]  # its insights go to memory (advice)
    proxy.set(fault)
    with caplog.at_level(logging.WARNING):
        answers = await asyncio.gather(*(ask(client, LOCAL_QUESTION) for _ in range(12)))
        assert all(a.status_code == 200 and a.json()["data"] and a.json()["error"] is None for a in answers)
        memory = await client.get("/v1/memory", headers=KEY)
        assert memory.status_code == 503 and memory.json()["error_code"] == "memory_unavailable"
        assert int(memory.headers["retry-after"]) >= 1
        ready = await client.get("/health/ready")
        assert ready.status_code == 200 and ready.json()["status"] == "degraded"
        assert ready.json()["dependencies"]["memory"]["state"] == "down"
        assert ready.json()["dependencies"]["sessions"]["state"] == "ok"
        more = await asyncio.gather(*(ask(client, LOCAL_QUESTION) for _ in range(12)))
        assert all(a.status_code == 200 for a in more)
    outage_lines = [r for r in caplog.records if r.name.startswith("baton.state.bulkheads")]
    assert 1 <= len(outage_lines) <= 3, [r.getMessage() for r in outage_lines]  # one per dependency per interval
    assert not any(r.exc_info for r in caplog.records)  # no tracebacks for advice that was dropped
    proxy.set("pass")
    assert (await ask(client, LOCAL_QUESTION)).status_code == 200


@pytest.mark.parametrize("fault", ["freeze", "drop"])
async def test_conversations_down_is_a_fast_503_and_no_acknowledged_turn_is_lost(client, proxies, fault):
    proxy = proxies["sessions"][0]
    acknowledged = []
    for _ in range(4):
        response = await ask(client, LOCAL_QUESTION)
        assert response.status_code == 200
        acknowledged.append((response.json()["session_id"], response.json()["turn_id"]))
    proxy.set(fault)
    failed = await asyncio.gather(*(ask(client, LOCAL_QUESTION) for _ in range(6)))
    assert all(r.status_code == 503 and r.json()["error_code"] == "state_unavailable" for r in failed)
    assert all(int(r.headers["retry-after"]) >= 1 for r in failed)
    other = await asyncio.gather(*(ask(client, LOCAL_QUESTION, OTHER) for _ in range(6)))  # another workspace's store
    assert all(r.status_code == 200 and r.json()["data"] for r in other)
    ready = await client.get("/health/ready")
    assert ready.status_code == 503 and ready.json()["dependencies"]["sessions"]["state"] == "down"
    proxy.set("pass")
    await asyncio.sleep(1.1)  # the breaker's cooldown: the next call probes the store again
    for session_id, turn_id in acknowledged:
        turns = (await client.get(f"/v1/sessions/{session_id}", headers=KEY)).json()["turns"]
        assert [t["answer"]["turn_id"] for t in turns] == [turn_id]
    assert (await ask(client, LOCAL_QUESTION)).status_code == 200


async def test_frozen_conversations_of_one_workspace_stall_only_that_workspace(client, proxies):
    """Ordered, not timed: the other workspace's questions are all answered while the frozen
    store's questions are still waiting (their bulkhead's time limit is what ends them)."""
    for ws in client.app.state.workspaces:
        ws.sessions.bulkhead.timeout_s = 30.0
    proxy = proxies["sessions"][0]
    proxy.set("freeze")
    stalled = [asyncio.ensure_future(ask(client, LOCAL_QUESTION)) for _ in range(4)]
    other = await asyncio.gather(*(ask(client, LOCAL_QUESTION, OTHER) for _ in range(12)))
    waiting = sum(not s.done() for s in stalled)
    proxy.set("pass")
    done = await asyncio.gather(*stalled)
    assert all(r.status_code == 200 for r in other) and waiting == len(stalled)
    assert all(r.status_code == 200 for r in done)  # released: answered and stored, nothing lost


async def test_the_data_database_going_away_is_a_typed_error(client, proxies):
    proxy = proxies["data"][0]
    assert (await ask(client, PG_QUESTION)).json()["data"]
    proxy.set("drop")
    dropped = await ask(client, PG_QUESTION)
    assert dropped.status_code == 503 and dropped.json()["error_code"] == "database_unavailable"
    assert dropped.json()["response_type"] == "error"
    proxy.set("freeze")  # the server never answers: given up 0.5 s past the 1 s statement timeout, before the 3 s deadline
    frozen = await ask(client, PG_QUESTION)
    assert frozen.status_code == 503 and frozen.json()["error_code"] == "database_unavailable"
    # what the database did ("did not answer within 1.5 s") is the log's; users read the code's sentence
    assert frozen.json()["metadata"]["agent_errors"][0]["error"] == "The database could not be reached."
    proxy.delay_s = 0.03  # every packet late: slower, still answered within the deadline
    proxy.set("slow")
    slow = await ask(client, PG_QUESTION)
    assert slow.status_code == 200 and slow.json()["data"]
    proxy.set("pass")
    assert (await ask(client, PG_QUESTION)).status_code == 200


async def test_slow_stores_slow_nothing_else_down(client, proxies):
    for name in ("memory", "sessions"):
        proxies[name][0].delay_s = 0.02
        proxies[name][0].set("slow")
    answers = await asyncio.gather(*(ask(client, LOCAL_QUESTION) for _ in range(6)))
    assert all(a.status_code == 200 and a.json()["data"] for a in answers)
    assert (await client.get("/v1/memory", headers=KEY)).status_code == 200
    ready = (await client.get("/health/ready")).json()
    assert ready["dependencies"]["memory"]["state"] != "down" and ready["dependencies"]["sessions"]["state"] != "down"
    for session_id in {a.json()["session_id"] for a in answers}:
        assert (await client.get(f"/v1/sessions/{session_id}", headers=KEY)).json()["turns"]
