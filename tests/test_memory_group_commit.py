"""Memory writes in group transactions (``baton.memory.group_commit``) and advisory writes shed
by policy (``baton.state.advisory_queue``): many writers, from several store instances
(SQLite) or processes (PostgreSQL), to one workspace: every write stored exactly once, each
stream's events in its writer's order, the chain intact; a write shed by the queue's policy
is counted in ``/metrics`` and in ``/health/ready``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from baton.agents import LexicalRouter, OrchestratorAgent
from baton.memory import (
    InvalidRecordError,
    MemoryStore,
    NewEvent,
    Principal,
    Provenance,
    RecordDraft,
    TrustedAuthenticator,
)
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.state.bulkheads import Bulkhead, DependencyUnavailable

SRC = str(Path(__file__).resolve().parents[1] / "src")

WRITER = """
import sys, threading
from baton.memory import MemoryStore, NewEvent, Principal, TrustedAuthenticator
url, schema, tag, threads, n, record_id = sys.argv[1], sys.argv[2] or None, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
store = MemoryStore(url, authenticator=TrustedAuthenticator(), schema=schema, create=False)
scope = store.open(Principal("acme"))
def write(t):
    for k in range(n):
        store.append_events(scope, [NewEvent(f"w:{tag}:{t}", "test.write", {"k": k}, expected_version=k)])
        store.mark_applied(scope, [record_id])
workers = [threading.Thread(target=write, args=(t,)) for t in range(threads)]
for w in workers: w.start()
for w in workers: w.join()
print(store.write_totals["committed"])
store.close()
"""


def _shared_record(store: MemoryStore) -> str:
    scope = store.open(Principal("acme"))
    draft = RecordDraft("learning", "orders.total is in cents", entity="orders", attribute="total_unit", value="cents",
                        provenance=Provenance(session_id="s0"))
    return store.remember(scope, draft).record.id


def _check(store: MemoryStore, record_id: str, streams: list[str], n: int) -> None:
    scope = store.open(Principal("acme"))
    events = store.events(scope)
    for stream in streams:
        mine = [e for e in events if e.stream == stream]
        assert [e.payload["k"] for e in mine] == list(range(n)), stream  # once each, in the writer's order
        assert [e.version for e in mine] == list(range(1, n + 1))
    applied = [e for e in store.history(scope, record_id) if e.type == "record.applied"]
    assert len(applied) == len(streams) * n
    assert store.get(scope, record_id).times_applied == len(streams) * n
    assert store.verify(scope).ok and store.check_projection(scope) == []
    assert [e.position for e in events] == list(range(1, len(events) + 1))


def test_several_store_instances_on_one_sqlite_file_store_every_write_once_in_order(tmp_path):
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    stores = [MemoryStore(url, authenticator=TrustedAuthenticator()) for _ in range(3)]
    record_id = _shared_record(stores[0])
    n, streams = 15, []

    def write(store: MemoryStore, stream: str) -> None:
        scope = store.open(Principal("acme"))
        for k in range(n):
            store.append_events(scope, [NewEvent(stream, "test.write", {"k": k}, expected_version=k)])
            store.mark_applied(scope, [record_id])

    threads = []
    for i, store in enumerate(stores):
        for t in range(4):
            streams.append(f"w:{i}:{t}")
            threads.append(threading.Thread(target=write, args=(store, streams[-1])))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _check(stores[0], record_id, streams, n)
    assert sum(s.write_totals["committed"] for s in stores) == 1 + len(streams) * n * 2
    assert all(s.write_totals["failed"] == 0 for s in stores)
    for store in stores:
        store.close()


def test_writes_that_arrive_together_share_one_transaction_and_a_refused_one_rolls_back_alone(tmp_path):
    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}", authenticator=TrustedAuthenticator())
    scope = store.open(Principal("acme"))
    release = threading.Event()
    results: dict[int, object] = {}

    def first(tx):  # holds the group open until the others queued behind it
        release.wait()
        return tx.append([NewEvent("w:first", "test.write", {"k": 0}, 0)]) or "first"

    def later(i: int):
        def op(tx):
            if i == 4:
                tx.append([NewEvent("w:4", "test.write", {"k": 0}, 0)])
                raise InvalidRecordError("refused after appending")  # its savepoint rolls back, alone
            tx.append([NewEvent(f"w:{i}", "test.write", {"k": 0}, 0)])
            return i
        return op

    def run(i: int, fn) -> None:
        try:
            results[i] = store.transact(scope, fn)
        except InvalidRecordError as exc:
            results[i] = exc

    leader = threading.Thread(target=run, args=(0, first))
    leader.start()
    while "acme" not in store._group._queues:  # the leader is inside its group
        threading.Event().wait(0.005)
    followers = [threading.Thread(target=run, args=(i, later(i))) for i in range(1, 9)]
    for thread in followers:
        thread.start()
    while len(store._group._queues["acme"]) < 8:  # all eight queued behind the group in progress
        threading.Event().wait(0.005)
    release.set()
    for thread in [leader, *followers]:
        thread.join()
    assert isinstance(results[4], InvalidRecordError)
    assert {i: r for i, r in results.items() if i not in (0, 4)} == {i: i for i in range(1, 9) if i != 4}
    assert store.write_totals == {"groups": 2, "committed": 9, "failed": 0}  # the leader's group, then the eight
    streams = [e.stream for e in store.events(scope)]
    assert sorted(streams) == sorted(["w:first"] + [f"w:{i}" for i in range(1, 9) if i != 4])
    assert store.verify(scope).ok
    store.close()


@pytest.fixture
def pg_schema(postgres_url):
    schema = f"baton_mem_{uuid.uuid4().hex[:10]}"
    admin = create_engine(postgres_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield schema
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.mark.postgres
def test_several_processes_on_postgresql_store_every_write_once_in_order(postgres_url, pg_schema):
    store = MemoryStore(postgres_url, authenticator=TrustedAuthenticator(), schema=pg_schema)
    record_id = _shared_record(store)
    n, threads, tags = 10, 3, ["p0", "p1", "p2"]
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, postgres_url, pg_schema, tag, str(threads), str(n), record_id],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for tag in tags]
    outputs = [w.communicate(timeout=300) for w in writers]
    assert all(w.returncode == 0 for w in writers), [err[-2000:] for _, err in outputs]
    assert sum(int(out.split()[-1]) for out, _ in outputs) == len(tags) * threads * n * 2  # each write committed once
    _check(store, record_id, [f"w:{tag}:{t}" for tag in tags for t in range(threads)], n)
    store.close()


def test_the_advisory_queue_sheds_the_least_valuable_oldest_write_and_never_times_out():
    bulkhead = Bulkhead("insights[t]", threads=1, advisory_workers=1, advisory_capacity=2, timeout_s=0.001)
    release, done = threading.Event(), []

    def slow(name: str) -> None:  # far longer than timeout_s: only the policy may shed
        release.wait()
        done.append(name)

    async def scenario() -> dict:
        running = bulkhead.advice(slow, "running", kind="insight")
        while bulkhead.advisory._queue:  # until the worker took it off the queue
            await asyncio.sleep(0.005)
        usage = bulkhead.advice(done.append, "usage", kind="usage")
        learning = bulkhead.advice(done.append, "learning", kind="learning")
        insight = bulkhead.advice(done.append, "insight", kind="insight")  # full: the usage count is shed
        late_usage = bulkhead.advice(done.append, "late usage", kind="usage")  # worth least: shed itself
        assert not bulkhead.advise(done.append, "another usage", kind="usage")
        for future in (usage, late_usage):
            with pytest.raises(DependencyUnavailable) as shed:
                future.result(timeout=0)
            assert shed.value.reason == "shed"
        release.set()
        await bulkhead.drain(30)
        assert all(f.result() is None for f in (running, learning, insight))
        return bulkhead.state()

    state = asyncio.run(scenario())
    assert done == ["running", "learning", "insight"]  # in the order offered
    assert state["writes"] == {"offered": 6, "stored": 3, "shed": 3, "failed": 0}
    assert state["failed"] == 0 and state["state"] != "down"  # nothing counted as a timeout
    bulkhead.close()


async def test_a_shed_write_is_counted_in_metrics_and_readiness(tmp_path):
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}", authenticator=TrustedAuthenticator())
    ws = Workspace("acme", OrchestratorAgent("acme-orchestrator", model=LexicalRouter(min_score=0.0)),
                   SessionStore(tmp_path / "sessions.sqlite"), memory=memory)
    insights = ws.bulkheads.insights
    insights.advisory.capacity = insights.advisory.workers = 1
    release = threading.Event()
    scope = memory.open(Principal("acme"))
    draft = RecordDraft("insight", "revenue peaked in November", entity="insight:peak", attribute="peak",
                        provenance=Provenance("insights", session_id="s1"))

    def held_insight() -> None:
        release.wait()
        memory.remember_insight(scope, draft)

    app = create_app(Workspaces([ws]), ApiKeys({"key-acme": "acme"}))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            assert (await client.get("/metrics")).status_code == 401
            first = insights.advice(held_insight)
            while insights.advisory._queue:
                await asyncio.sleep(0.005)
            insights.advise(memory.remember_insight, scope, draft)  # queued (the capacity is one)
            insights.advise(memory.mark_applied, scope, [], kind="usage")  # worth least: shed by policy
            metrics = await client.get("/metrics", headers={"Authorization": "Bearer key-acme"})
            assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
            assert 'baton_memory_writes_total{outcome="offered"} 3' in metrics.text
            assert 'baton_memory_writes_total{outcome="shed"} 1' in metrics.text, metrics.text
            ready = (await client.get("/health/ready")).json()
            assert ready["dependencies"]["insights"]["writes"] == {"offered": 3, "stored": 0, "shed": 1, "failed": 0}
            release.set()
            await asyncio.wrap_future(first)
            await insights.drain(30)
            metrics = (await client.get("/metrics", headers={"Authorization": "Bearer key-acme"})).text
            assert 'baton_memory_writes_total{outcome="stored"} 2' in metrics
            assert "baton_memory_committed_writes_total 2" in metrics
            assert len(memory.about(scope, "insight", "insight:peak")) == 1  # created, then resurfaced

