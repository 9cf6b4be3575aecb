"""Live events over Redis pub/sub (``baton.state.bus_redis``), on the Redis server of
``BATON_TEST_REDIS_URL`` (skipped with the reason when unset): events cross processes and stay
per channel, a large one is cut down, hostile messages are ignored, publishing while Redis is
away neither blocks nor raises and delivery resumes, a lost or silent subscriber connection is
reopened, closing leaves no thread or connection, and a pipeline run's events reach the
asking request and the event stream through Redis.

The shared server is never stopped: outages are a fault proxy in front of it
(``tests/fault_proxy.py``) or ``CLIENT KILL`` of this test's own connection, and every test
uses channels of its own."""

import asyncio
import json
import logging
import subprocess
import sys
import threading
import time
import uuid
from urllib.parse import urlsplit

import pytest
import redis

from baton.errors import ConfigurationError
from baton.state.bus_redis import CHANNEL_PREFIX, EventBusUnavailableError, RedisBus
from baton.workspace.pipeline_host import bus_for
from fault_proxy import FaultProxy
from workspace_doubles import pipeline_model, sales_db

pytestmark = [pytest.mark.timeout(120), pytest.mark.redis]


@pytest.fixture
def buses():
    made: list[RedisBus] = []

    def make(url: str, **options) -> RedisBus:
        bus = RedisBus(url, **options)
        made.append(bus)
        return bus

    yield make
    for bus in made:
        bus.close()


@pytest.fixture
def proxy(redis_url):
    parts = urlsplit(redis_url)
    running = FaultProxy(parts.hostname or "127.0.0.1", parts.port or 6379).start()
    yield running
    running.stop()


def through(proxy: FaultProxy, url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=f"{parts.netloc.rsplit('@', 1)[0] + '@' if '@' in parts.netloc else ''}127.0.0.1:{proxy.port}").geturl()


def channel() -> str:
    return f"test-{uuid.uuid4().hex}"


async def received(sub, timeout: float = 5.0) -> list[dict]:
    """What ``sub`` gets until nothing more arrives for ``timeout`` seconds... or 0.3 s once something did."""
    got = []
    while (event := await sub.get(timeout if not got else 0.3)) is not None:
        got.append(event)
    return got


async def test_events_cross_processes_and_stay_per_channel(redis_url, buses):
    mine, other = channel(), channel()
    listener = buses(redis_url)
    with listener.subscribe(mine) as sub, listener.subscribe(other) as sub_other:
        script = ("import sys; from baton.state.bus_redis import RedisBus\n"
                  "bus = RedisBus(sys.argv[1])\n"
                  "for n in range(3): bus.publish(sys.argv[2], {'type': 'step', 'data': {'n': n}})\n"
                  "bus.publish(sys.argv[3], {'type': 'elsewhere'})\n"
                  "bus.close()\n")
        await asyncio.to_thread(subprocess.run, [sys.executable, "-c", script, redis_url, mine, other], check=True, timeout=30)
        assert [e["data"]["n"] for e in await received(sub)] == [0, 1, 2]
        assert await received(sub_other) == [{"type": "elsewhere"}]


async def test_a_large_event_is_cut_down_not_dropped(redis_url, buses):
    name = channel()
    listener, publisher = buses(redis_url), buses(redis_url)
    with listener.subscribe(name) as sub:
        publisher.publish(name, {"type": "stage.end", "id": "e1", "data": {"rows": ["x" * 100] * 5000, "stage_id": "totals"}})
        publisher.publish(name, {"type": "huge", "data": {f"k{n}": "y" * 400 for n in range(1000)}})
        big, huge = await received(sub)
    assert big["type"] == "stage.end" and big["id"] == "e1"
    assert big["data"] == {"rows": "[list too large for a live event]", "stage_id": "totals", "truncated": True}
    assert huge == {"type": "huge", "data": {"truncated": True}}  # many values each under the cut: all go


async def test_hostile_messages_are_ignored_with_a_log_and_the_listener_goes_on(redis_url, buses, caplog):
    name = channel()
    listener = buses(redis_url)
    raw = redis.Redis.from_url(redis_url)
    try:
        with caplog.at_level(logging.WARNING, "baton.state.bus"), listener.subscribe(name) as sub:
            for payload in (b"not json", b"\xff\xfe\x00", b"[1, 2]", b'{"event": "text"}', b'{"event": [1]}', b"null",
                            b'{"no": "event"}', json.dumps({"event": {"x": "z" * 200_000}}).encode(), b"{" * 100_000):
                raw.publish(CHANNEL_PREFIX + name, payload)
            raw.publish(CHANNEL_PREFIX.encode() + b"\xff\xfe", b'{"event": {"type": "bad channel name"}}')
            raw.publish(CHANNEL_PREFIX + name, json.dumps({"event": {"type": "fine"}}))
            assert await received(sub) == [{"type": "fine"}]
    finally:
        raw.close()
    ignored = [r.getMessage() for r in caplog.records if "was ignored" in r.getMessage()]
    assert len(ignored) == 10, ignored
    assert all(len(line) < 600 for line in ignored)  # a huge message is not copied into the log
    assert listener.listening.is_set()


async def test_publishing_while_redis_is_away_neither_blocks_nor_raises_and_resumes(redis_url, buses, proxy):
    name = channel()
    listener, publisher = buses(redis_url), buses(through(proxy, redis_url))
    with listener.subscribe(name) as sub:
        publisher.publish(name, {"type": "before"})
        assert await received(sub) == [{"type": "before"}]
        proxy.set("drop")

        def publish_all() -> None:
            for n in range(200):
                publisher.publish(name, {"type": "during", "data": {"n": n}})

        await asyncio.wait_for(asyncio.to_thread(publish_all), 10)  # returns: the caller never waits on Redis
        await asyncio.sleep(1.0)  # the publisher has failed and is backing off
        assert await sub.get(0.1) is None
        proxy.set("pass")
        publisher.publish(name, {"type": "after"})
        got = await received(sub, timeout=15)
    assert [e["type"] for e in got] == ["during"] * 200 + ["after"]  # queued in order, none lost in a short outage
    assert [e["data"]["n"] for e in got[:-1]] == list(range(200))


async def test_a_full_queue_drops_events_and_says_so(redis_url, buses, proxy, caplog):
    publisher = buses(through(proxy, redis_url), outbox_size=5)
    proxy.set("drop")
    with caplog.at_level(logging.WARNING, "baton.state.bus"):
        for n in range(50):
            publisher.publish("anything", {"n": n})
    assert publisher.dropped >= 40
    assert any("queue full" in r.getMessage() for r in caplog.records)


async def test_a_killed_subscriber_connection_is_reopened(redis_url, buses, caplog):
    name = channel()
    listener, publisher = buses(redis_url), buses(redis_url)
    admin = redis.Redis.from_url(redis_url)
    try:
        with caplog.at_level(logging.WARNING, "baton.state.bus"), listener.subscribe(name) as sub:
            mine = [c for c in admin.client_list() if c.get("name") == listener.client_name]
            assert len(mine) == 1
            admin.client_kill_filter(_id=mine[0]["id"])
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:  # pub/sub keeps nothing: publish until the new connection hears
                publisher.publish(name, {"type": "ping"})
                if await sub.get(0.3) is not None:
                    break
            else:
                pytest.fail("the subscriber never came back")
            assert [c["id"] for c in admin.client_list() if c.get("name") == listener.client_name] != [mine[0]["id"]]
    finally:
        admin.close()
    messages = [r.getMessage() for r in caplog.records]
    assert any("connection" in m and "lost" in m for m in messages) and any("receiving events" in m for m in messages)


async def test_a_silent_network_is_noticed_by_its_unanswered_ping(redis_url, buses, proxy):
    name = channel()
    listener = buses(through(proxy, redis_url), health_check_s=0.5, read_timeout_s=1.0)
    publisher = buses(redis_url)
    with listener.subscribe(name) as sub:
        assert listener.listening.is_set()
        proxy.set("freeze")  # nothing moves, nothing is closed: only the unanswered PING tells
        deadline = time.monotonic() + 10
        while listener.listening.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert not listener.listening.is_set()
        proxy.set("drop")  # the frozen connection goes; the next one gets through
        proxy.set("pass")
        deadline = time.monotonic() + 15
        while not listener.listening.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        publisher.publish(name, {"type": "back"})
        assert await received(sub) == [{"type": "back"}]


async def test_close_leaves_no_thread_and_no_connection(redis_url):
    before = {t.ident for t in threading.enumerate()}
    bus = RedisBus(redis_url)
    name = channel()
    with bus.subscribe(name) as sub:
        bus.publish(name, {"type": "x"})
        assert await received(sub) == [{"type": "x"}]
    bus.close()
    assert {t.ident for t in threading.enumerate()} <= before
    admin = redis.Redis.from_url(redis_url)
    try:
        assert not [c for c in admin.client_list() if c.get("name") == bus.client_name]
    finally:
        admin.close()
    bus.publish(name, {"type": "after close"})  # a no-op, not an error
    assert {t.ident for t in threading.enumerate()} <= before


def test_a_redis_events_url_gives_a_checked_redis_bus(redis_url):
    bus = bus_for("postgresql://u@h/state", redis_url)  # the events URL wins over the state's
    try:
        assert isinstance(bus, RedisBus)
    finally:
        bus.close()


def test_an_unreachable_redis_refuses_to_start_and_says_where():
    with pytest.raises(EventBusUnavailableError) as caught:
        bus_for("postgresql://u@h/state", "redis://:hunter2@127.0.0.1:1/0")
    assert "redis://:***@127.0.0.1:1/0" in str(caught.value) and "hunter2" not in str(caught.value)
    assert isinstance(caught.value, ConfigurationError)


async def test_a_redis_that_never_answers_is_refused_at_start_not_waited_for(redis_url, proxy):
    proxy.set("freeze")  # connects, then silence: only the start-up ping's own bound ends the wait
    with pytest.raises(EventBusUnavailableError):
        await asyncio.wait_for(asyncio.to_thread(bus_for, "postgresql://u@h/state", through(proxy, redis_url)), 10)


def test_events_urls_of_other_kinds_are_refused():
    with pytest.raises(ConfigurationError, match="PostgreSQL .* or Redis"):
        bus_for(None, "mysql://u@h/events")


async def test_a_pipeline_runs_events_reach_the_asking_request_and_the_event_stream_through_redis(redis_url, tmp_path):
    """The worker side (the host's ``PipelineWorker``) publishes each stage's events on Redis; the
    replica side's subscription (``DurablePipelines``) receives them from there."""
    from baton.events import RecordingTracker
    from baton.llm import FunctionModel
    from baton.pipeline import CheckpointDecision
    from baton.state.location import State
    from baton.workspace.database import open_database_workspace
    from baton.workspace.pipeline_host import PipelineHost
    from baton.workspace.planning import durable_pipelines

    state = State.from_env({}, home=tmp_path / "home")
    host = PipelineHost.for_state(state, events_url=redis_url, queue_polling_interval_s=0.1)
    assert isinstance(host.bus, RedisBus)
    heard: list[tuple[str, str]] = []  # what the replica side's subscription got from Redis
    dispatch = host.bus._dispatch
    host.bus._dispatch = lambda name, event: (heard.append((name, event.get("type"))), dispatch(name, event))[1]
    ws = open_database_workspace(sales_db(tmp_path / "shop.sqlite"), FunctionModel(pipeline_model), state=state, pipelines=durable_pipelines(host))
    ws.own(host)
    async with ws:
        tracker = RecordingTracker()
        paused = await ws.answer("First the total amount by region, then count the sales", tracker=tracker)
        assert paused.response_type == "stage_checkpoint"
        wid = paused.workflow_id
        assert {"stage.start", "sql.attempt", "stage.checkpoint"} <= {t for name, t in heard if name == wid}
        assert "sql.attempt" in tracker.types()
        streamed = []

        async def stream():
            async for event in ws.pipelines.events(wid):
                streamed.append(event.type)

        following = asyncio.create_task(stream())
        await asyncio.sleep(0.5)  # the stream has read the log and waits on Redis
        heard.clear()
        await ws.pipelines.decide(wid, CheckpointDecision("approve", stage_id="totals"), wait=False)
        await asyncio.wait_for(following, 60)
        live = {t for name, t in heard if name == wid}
        assert {"stage.start", "sql.attempt", "stage.end"} <= live  # the second stage, live through Redis
        assert "pipeline.complete" in streamed and streamed.count("stage.start") == 2
    assert host.bus._threads == []
