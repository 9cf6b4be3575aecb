"""The run event log (``baton.pipeline.durable.run_log``) on SQLite: numbering per run,
attempts, tokens outside the sequence, and every relayed event already stored; on
PostgreSQL, events emitted while the database refuses connections are stored (in order,
then relayed) once it is back."""

import threading
import time

import pytest

from baton.pipeline.durable.run_log import RunLog, RunLogWriter
from fault_proxy import proxied


def event(kind: str, n: int) -> dict:
    return {"id": f"w:{n}", "type": kind, "data": {"n": n}, "workflow_id": "w", "ts": 0.0}


def writer_on(tmp_path):
    url = f"sqlite:///{tmp_path / 'system.sqlite'}"
    relayed: list[tuple[str, dict]] = []
    unstored: list[dict] = []
    done = threading.Event()
    reader = RunLog(url, None)

    def relay(channel: str, raw: dict) -> None:
        seq = raw["data"].get("seq")
        if seq is not None and seq not in [e["data"]["seq"] for e in reader.read(channel, after=seq - 1, limit=1)]:
            unstored.append(raw)
        relayed.append((channel, raw))
        if raw["type"] == "done":
            done.set()

    return RunLogWriter(RunLog(url, None), relay=relay), reader, relayed, unstored, done


def test_events_are_numbered_per_run_stored_before_relay_and_a_replay_is_a_new_attempt(tmp_path):
    writer, reader, relayed, unstored, done = writer_on(tmp_path)
    try:
        writer.begin("w")
        for n in range(1, 4):
            writer.emit("w", event("stage.start", n))
            writer.emit("other", event("stage.start", n))
        writer.emit("w", event("llm.token", 0))
        writer.begin("w")  # the workflow replayed after a takeover
        writer.emit("w", event("stage.start", 1))
        writer.emit("w", event("done", 9))
        assert done.wait(10)
    finally:
        writer.close()
    stored = reader.read("w")
    assert [(e["data"]["seq"], e["data"]["attempt"], e["data"]["n"]) for e in stored] == [
        (1, 1, 1), (2, 1, 2), (3, 1, 3), (4, 2, 1), (5, 2, 9)]
    assert [e["data"]["seq"] for e in reader.read("other")] == [1, 2, 3]
    assert [e["data"]["seq"] for e in reader.read("w", after=3)] == [4, 5]
    token = next(raw for _, raw in relayed if raw["type"] == "llm.token")
    assert token["after_seq"] == 3 and "seq" not in token["data"]  # not numbered, not stored
    assert [raw["data"].get("seq") for c, raw in relayed if c == "w"] == [1, 2, 3, None, 4, 5]  # relayed in order
    assert unstored == []
    reader.close()


def test_a_new_writer_continues_a_runs_numbers_as_a_later_attempt(tmp_path):
    for _ in range(2):  # two worker processes, one after the other (a takeover)
        writer, reader, _, _, done = writer_on(tmp_path)
        writer.begin("w")
        writer.emit("w", event("stage.start", 1))
        writer.emit("w", event("done", 2))
        assert done.wait(10)
        writer.close()
    assert [(e["data"]["seq"], e["data"]["attempt"]) for e in reader.read("w")] == [(1, 1), (2, 1), (3, 2), (4, 2)]
    reader.close()


@pytest.mark.postgres
def test_events_emitted_while_the_database_is_away_are_stored_in_order_once_it_is_back(state_db, caplog):
    with proxied(state_db) as (proxy, through):
        relayed: list[int] = []
        done = threading.Event()

        def relay(channel: str, raw: dict) -> None:
            relayed.append(raw["data"]["seq"])
            if raw["type"] == "done":
                done.set()

        writer = RunLogWriter(RunLog(through, None), relay=relay)
        try:
            writer.begin("w")
            writer.emit("w", event("stage.start", 1))
            wait_for(lambda: relayed == [1])
            proxy.set("drop")  # the state database refuses connections
            for n in range(2, 6):
                writer.emit("w", event("stage.start", n))
            time.sleep(0.5)
            assert relayed == [1]  # nothing relayed that is not stored
            proxy.set("pass")
            writer.emit("w", event("done", 6))
            assert done.wait(20)
        finally:
            writer.close()
    reader = RunLog(state_db, None)
    assert [(e["data"]["seq"], e["data"]["n"]) for e in reader.read("w")] == [(n, n) for n in range(1, 7)]
    assert relayed == [1, 2, 3, 4, 5, 6]
    reader.close()
    said = [r.getMessage() for r in caplog.records if r.name == "baton.pipeline.durable"]
    assert [m.split(" (")[0] for m in said] == ["storing run events failed", "storing run events works again"]  # one line per change


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
