"""Chart rendering under load and hostile specs: each workspace gets a share of the
process's renderers, a bounded queue and a cache, and a failed render costs its worker.

Ordered, not timed: a workspace's one-bar chart is rendered while another workspace's slow
charts are still queued behind their share."""

from __future__ import annotations

import asyncio

import pytest

from baton.viz import ChartRenderError
from baton.workspace.charts import ChartBusyError, ChartRenderer, RenderService

BAR = {"data": {"values": [{"a": "x", "b": 1}]}, "mark": "bar",
       "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}


def slow(n: int) -> dict:
    return {"data": {"sequence": {"start": 0, "stop": 30_000 + n, "as": "v"}}, "mark": "point",
            "encoding": {"x": {"field": "v", "type": "quantitative"}, "y": {"field": "v", "type": "quantitative"}}}


@pytest.fixture
def service():
    service = RenderService(2)
    yield service
    service.close()


async def test_a_spec_that_breaks_the_engine_does_not_break_the_next_chart(service):
    renderer = ChartRenderer(service=service)
    hostile = dict(BAR, encoding=dict(BAR["encoding"], href={"value": "javascript:alert(1)"}))
    with pytest.raises(ChartRenderError):
        await renderer.svg(hostile)
    for n in range(5):  # every later chart renders (the failed worker was replaced)
        spec = dict(BAR, data={"values": [{"a": "x", "b": n + 2}]})
        assert (await renderer.svg(spec)).lstrip().startswith("<svg")


async def test_one_workspaces_slow_charts_do_not_hold_another_workspaces_chart(service):
    busy, quiet = ChartRenderer(service=service), ChartRenderer(service=service)
    assert busy.share == 1
    slow_ones = [asyncio.ensure_future(busy.svg(slow(n))) for n in range(3)]
    await asyncio.sleep(0)
    assert (await quiet.svg(BAR)).lstrip().startswith("<svg")
    pending = sum(not task.done() for task in slow_ones)
    assert pending >= 2  # the one-bar chart did not wait for the other workspace's queue
    for task in slow_ones:
        task.cancel()
    await asyncio.gather(*slow_ones, return_exceptions=True)


async def test_a_full_queue_refuses_at_once_and_the_cache_answers_repeats(service):
    renderer = ChartRenderer(service=service, queue=2)
    waiting = [asyncio.ensure_future(renderer.svg(slow(n))) for n in range(3)]  # 1 rendering + 2 waiting
    await asyncio.sleep(0)
    with pytest.raises(ChartBusyError):
        await renderer.svg(slow(99))
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    first = await renderer.svg(BAR)
    again = await renderer.svg(dict(reversed(list(BAR.items()))))  # the same spec, keys in another order
    assert again == first and renderer.hits == 1


async def test_over_http_a_full_queue_is_a_429_with_retry_after(service):
    import httpx

    from agent_doubles import TableAgent
    from baton.agents import OrchestratorAgent
    from baton.llm import FunctionModel
    from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app

    orchestrator = OrchestratorAgent("c", model=FunctionModel(lambda m, t: "hi"))
    orchestrator.add_agent(TableAgent("t"))
    ws = Workspace("c", orchestrator, SessionStore(), charts=ChartRenderer(service=service, queue=0))
    app = create_app(Workspaces([ws]), ApiKeys({"k": "c"}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        first = asyncio.ensure_future(client.post("/v1/charts/render", json={"spec": slow(7)}, headers={"X-API-Key": "k"}))
        while ws.charts._semaphore is None or not ws.charts._semaphore.locked():
            await asyncio.sleep(0.01)
        refused = await client.post("/v1/charts/render", json={"spec": BAR}, headers={"X-API-Key": "k"})
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert (await first).status_code == 200
    await ws.aclose()
