"""A dependency outage is one log line when it goes and one when it comes back (with the
count of failed attempts in between), never a traceback per attempt: the state database under
a worker's heartbeat and DBOS's pollers, the PostgreSQL event bus, a store's bulkhead. The
outages are real: a fault proxy between Baton and PostgreSQL refuses every connection."""

from __future__ import annotations

import asyncio
import logging
import time

import psycopg
import pytest
import sqlalchemy as sa

from baton import outages
from baton.outages import STATE_DATABASE, OutageLog, is_outage, outage
from baton.pipeline.durable.dbos_outages import quiet_dbos_outages
from baton.pipeline.durable.heartbeat import Heartbeat
from baton.state.bulkheads import Bulkhead, DependencyUnavailable
from baton.state.bus import EVENT_BUS_DOWN, PostgresBus
from fault_proxy import proxied
from live_server import free_port

BOUND_S = 30.0  # failure bound of each wait, never a timing assertion


@pytest.fixture(autouse=True)
def fresh_outage_logs(monkeypatch):
    monkeypatch.setattr(outages, "_LOGS", {})


def lines(caplog, what: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith(what)]


def wait_for(predicate) -> None:
    deadline = time.monotonic() + BOUND_S
    while not predicate():
        assert time.monotonic() < deadline, "not within the failure bound"
        time.sleep(0.05)


def refused_error() -> BaseException:
    """A real driver error: PostgreSQL's client connecting to a port nothing listens on."""
    try:
        psycopg.connect(f"postgresql://postgres@127.0.0.1:{free_port()}/test", connect_timeout=2)
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("something listens on a free port")


def test_an_outage_is_two_lines_with_the_count_between(caplog):
    log = OutageLog("the store", logging.getLogger("baton.test"))
    error = refused_error()
    with caplog.at_level(logging.WARNING):
        for _ in range(40):
            log.failed(error)
        log.ok()
        log.ok()
    down, back = lines(caplog, "the store is down"), lines(caplog, "the store is back")
    assert len(caplog.records) == 2 and len(down) == 1 and len(back) == 1
    assert "OperationalError" in down[0].getMessage() and "\n" not in down[0].getMessage()
    assert "after 40 failed attempts" in back[0].getMessage()
    assert not any(r.exc_info for r in caplog.records) and log.outages == 1


def test_what_counts_as_an_outage():
    assert is_outage(refused_error())
    wrapped = sa.exc.OperationalError("SELECT 1", {}, refused_error())
    assert is_outage(wrapped)
    assert not is_outage(ValueError("a bug")) and not is_outage(KeyError("x"))
    assert is_outage(None, 'connection to server at "127.0.0.1", port 5432 failed: Connection refused')
    assert not is_outage(None, "Synchronous 'enqueue' was called from a running asyncio event loop")


def test_heartbeat_over_a_database_outage_logs_one_line_each_way(postgres_url, caplog):
    with proxied(postgres_url) as (proxy, url):
        beat = Heartbeat(url, schema=None, executor_id=f"outage-{free_port()}", queue_name="outage-test",
                         interval_s=0.05, lapse_s=60.0, take_over=lambda dead: 0)
        beat.start()
        try:
            with caplog.at_level(logging.WARNING):
                proxy.set("drop")
                state = outage(STATE_DATABASE)
                wait_for(lambda: state.down and state._failed >= 20)  # about 20 beats failed
                proxy.set("pass")
                wait_for(lambda: not state.down)
        finally:
            beat.stop()
            engine = sa.create_engine(postgres_url)
            with engine.begin() as conn:
                conn.execute(sa.delete(beat.table).where(beat.table.c.executor_id == beat.executor_id))
            engine.dispose()
    down, back = lines(caplog, f"{STATE_DATABASE} is down"), lines(caplog, f"{STATE_DATABASE} is back")
    assert len(down) == 1 and len(back) == 1, [r.getMessage() for r in caplog.records]
    failed = int(back[0].getMessage().split("after ")[1].split()[0])
    assert failed >= 20
    assert not any(r.exc_info for r in caplog.records), [r.getMessage() for r in caplog.records if r.exc_info]
    print(f"\nheartbeat: {failed} failed beats in one outage -> {len(down) + len(back)} log lines")


def test_dbos_poll_failures_fold_into_the_state_database_outage(caplog):
    quiet_dbos_outages()
    quiet_dbos_outages()  # idempotent
    dbos = logging.getLogger("dbos")
    assert sum(isinstance(f, type(dbos.filters[0])) for f in dbos.filters) == 1
    error = refused_error()
    with caplog.at_level(logging.WARNING):
        for _ in range(40):
            try:
                raise sa.exc.OperationalError("SELECT 1", {}, error)
            except sa.exc.OperationalError:
                dbos.warning("Fallback notification poll failed", exc_info=True)
            dbos.warning("Notification listener error: connection failed: Connection refused")
        dbos.warning("Synchronous 'enqueue' was called from a running asyncio event loop.")  # not an outage: passes
        outage(STATE_DATABASE).ok()  # the heartbeat's next beat
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith(f"{STATE_DATABASE} is down") and "after 80 failed attempts" in messages[-1]
    assert len(messages) == 3 and "Synchronous" in messages[1]
    assert not any(r.exc_info for r in caplog.records)


def test_event_bus_listener_over_an_outage_logs_one_line_each_way(postgres_url, caplog):
    async def scenario() -> None:
        with proxied(postgres_url) as (proxy, url):
            bus = PostgresBus(url)
            try:
                bus.subscribe("outage-test")
                with caplog.at_level(logging.WARNING):
                    proxy.set("drop")
                    bus_log = outage(EVENT_BUS_DOWN)
                    while not (bus_log.down and bus_log._failed >= 3):  # three reconnects failed
                        await asyncio.sleep(0.1)
                    proxy.set("pass")
                    while bus_log.down:
                        await asyncio.sleep(0.1)
            finally:
                bus.close()

    asyncio.run(asyncio.wait_for(scenario(), BOUND_S))
    down, back = lines(caplog, f"{EVENT_BUS_DOWN} is down"), lines(caplog, f"{EVENT_BUS_DOWN} is back")
    assert len(down) == 1 and len(back) == 1, [r.getMessage() for r in caplog.records]
    assert not any(r.exc_info for r in caplog.records if r.name.startswith("baton"))


@pytest.mark.parametrize("cooldown", [0.0, 60.0])
async def test_a_bulkhead_outage_is_two_lines(postgres_url, caplog, cooldown):
    """With no cooldown every call reaches the dead store; with a long one the breaker refuses
    all but the first three, and those refusals are counted too. A readiness probe (which
    tries the store even while the breaker is open) ends the outage."""
    with proxied(postgres_url) as (proxy, url):
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args={"connect_timeout": 2})
        bulkhead = Bulkhead("sessions", cooldown_s=cooldown)

        def ping() -> None:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")

        with caplog.at_level(logging.WARNING):
            proxy.set("drop")
            for _ in range(40):
                with pytest.raises(DependencyUnavailable):
                    await bulkhead.run(ping)
            proxy.set("pass")
            await bulkhead.probe(ping, timeout=5.0)
            await bulkhead.run(ping)
        bulkhead.close()
        engine.dispose()
    messages = [r.getMessage() for r in caplog.records if r.name == "baton.state.bulkheads"]
    assert len(messages) == 2 and messages[0].startswith("sessions is down"), messages
    assert "after 40 failed attempts" in messages[1]
    assert not any(r.exc_info for r in caplog.records)


def test_a_worker_logs_an_outage_of_the_state_database_in_two_lines(postgres_url, tmp_path):
    """A real ``baton worker`` on a PostgreSQL state reached through the fault proxy; the state
    database refuses every connection for 5 s. Before: one warning, mostly with a traceback,
    per failed poll and beat (3,249 lines and 61 tracebacks for a 10 s outage)."""
    from baton_processes import BatonProcess
    from pg_fresh import fresh_database

    with fresh_database(postgres_url, prefix="baton_outage") as url, proxied(url) as (proxy, state_url):
        worker = BatonProcess("worker", ["worker", "--executor-id", "outage-w1", "--state", state_url,
                                         "--heartbeat", "0.5", "--poll", "0.5"],
                              {"BATON_HOME": str(tmp_path), "BATON_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": "sk-test",
                               "COLUMNS": "200"})
        try:
            worker.wait_ready(120)
            before = len(worker.lines)
            proxy.set("drop")
            time.sleep(5.0)  # the outage's length, not a measurement
            proxy.set("pass")
            wait_for(lambda: any(" is back after " in line for line in worker.lines[before:]))
            time.sleep(1.0)  # anything logged just after the recovery counts too
            during = worker.lines[before:]
        finally:
            worker.stop()
    assert not any("Traceback" in line for line in during), "\n".join(during)
    assert len(during) == 2, "\n".join(during)
    assert during[0].startswith(f"{STATE_DATABASE} is down: ") and during[1].startswith(f"{STATE_DATABASE} is back after ")
    print(f"\nworker over a 5 s outage: {len(during)} log lines: " + " / ".join(during))
