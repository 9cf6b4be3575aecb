"""``/health/ready`` follows the state database back within seconds: cut it (refused or
hung) through the fault proxy while questions come in, restore it, and readiness is
``ready`` again. The bound below is a failure bound, not a timing assertion: the test polls
and prints how long it took (it used to stay "degraded" 25-30 s)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from baton.server import ApiKeys, SessionStore, Workspaces, create_app
from fault_proxy import proxied
from test_faults_database import KEY, LOCAL_QUESTION, _local_db, _workspace, ask

BOUND_S = 30.0  # failure bound only: the figure printed is the finding


@pytest.fixture
def database(postgres_url):
    from pg_fresh import fresh_database

    with fresh_database(postgres_url, prefix="baton_ready") as url:
        yield url


async def status(client) -> str:
    return (await client.get("/health/ready")).json()["status"]


async def until(client, wanted: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < BOUND_S:
        if await status(client) == wanted:
            return time.monotonic() - start
        await asyncio.sleep(0.1)
    report = (await client.get("/health/ready")).json()
    raise AssertionError(f"/health/ready not {wanted!r} within {BOUND_S:g} s: {report}")


@pytest.mark.parametrize("fault", ["drop", "freeze"])
async def test_readiness_is_back_within_seconds_of_the_database(database, tmp_path, fault):
    with proxied(database) as (proxy, url):
        ws = _workspace("db", sessions=SessionStore(url, timeout_s=1.0), memory_url=url, data_url=None,
                        local_url=_local_db(tmp_path))
        app = create_app(Workspaces([ws]), ApiKeys({"key-db": "db"}))
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=30) as client:
                assert (await ask(client, LOCAL_QUESTION, KEY)).status_code == 200
                assert await status(client) == "ready"
                proxy.set(fault)
                failed = await asyncio.gather(*(ask(client, LOCAL_QUESTION, KEY) for _ in range(8)))
                assert all(r.status_code == 503 for r in failed)  # the breaker is open: an outage as traffic saw it
                await until(client, "not_ready")
                await asyncio.sleep(2.0)  # a longer outage: the breaker has been re-opened by failed probes
                proxy.set("pass")
                back = await until(client, "ready")
                print(f"\n/health/ready 'ready' {back:.1f} s after the database came back ({fault})")
                assert (await ask(client, LOCAL_QUESTION, KEY)).status_code == 200
