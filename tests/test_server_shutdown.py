"""SIGTERM with event streams open: a real ``baton serve`` ends every open stream with a final
event (``error_code: server_stopping``) and exits, instead of waiting for its clients to
leave (``baton.server.shutdown``).

Three streams are open when the signal arrives, each held open by something that would not
end by itself: a pipeline paused at its checkpoint (its event stream), a streamed answer and
an OpenAI-style streamed completion whose model calls the stub holds. The deadlines below are
failure conditions, not measurements; the time taken is printed (``bench/server_shutdown.py``
measures it a few times)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from baton_processes import BatonProcess
from scale_rig import StubModel, build_shop, process_env, serve

pytestmark = pytest.mark.timeout(240)

PLAN = {"question": "review then details", "stages": [
    {"stage_id": "regions", "tool": "query_database", "question": "Regional totals for the review", "depends_on": [], "checkpoint": True},
    {"stage_id": "products", "tool": "query_database", "question": "Product totals to finish", "depends_on": ["regions"]},
]}
HELD = "slowly"


class HoldingModel(StubModel):
    """The rig's stub, holding every request about a question that says ``slowly`` until
    ``release``; ``arrived`` counts them."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = threading.Semaphore(0)

    def respond(self, kind: str, body: Any):
        if kind == "openai" and HELD in json.dumps(body.get("messages") or []):
            self.arrived.release()
            self.release.wait(120)
        return super().respond(kind, body)


class StreamReader(threading.Thread):
    """Reads one streamed response to its end, keeping every SSE frame (event name, data)."""

    def __init__(self, method: str, url: str, headers: dict[str, str], body: Any = None) -> None:
        super().__init__(daemon=True)
        self.method, self.url, self.headers, self.body = method, url, headers, body
        self.frames: list[tuple[str | None, str]] = []
        self.opened = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.stream(self.method, self.url, headers=self.headers, json=self.body,
                              timeout=httpx.Timeout(10, read=120)) as response:
                assert response.status_code == 200, response.read()
                self.opened.set()
                name = None
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: "):
                        self.frames.append((name, line[6:]))
                        name = None
        except BaseException as exc:  # reported by the test
            self.error = exc

    def names(self) -> list[str | None]:
        return [name for name, _ in self.frames]

    def saw(self, name: str, within: float = 60.0) -> bool:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if name in self.names():
                return True
            time.sleep(0.05)
        return False


def stop_with_open_streams(folder: Path, workers: int = 1) -> tuple[float, list[StreamReader], BatonProcess]:
    """A ``baton serve`` with three streams open, stopped by SIGTERM: the seconds it took to
    exit, the streams as their clients read them, and the process (for its output)."""
    stub = HoldingModel().start()
    server = serve("stopping", process_env(folder / "home", None, stub.model_string), "--database",
                   build_shop(folder / "shop.sqlite"), "--workers", str(workers))
    try:
        server.wait_ready()
        headers = {"Authorization": f"Bearer {server.key()}"}
        started = httpx.post(f"{server.url}/v1/pipelines", json={"plan": PLAN}, headers=headers, timeout=30)
        assert started.status_code == 202, started.text
        run_id = started.json()["workflow_id"]
        pipeline = StreamReader("GET", f"{server.url}/v1/pipelines/{run_id}/events", headers)
        answer = StreamReader("POST", f"{server.url}/v1/ask/stream", headers, {"question": f"Total sales by region, {HELD}"})
        chat = StreamReader("POST", f"{server.url}/v1/chat/completions", headers,
                            {"model": "database", "stream": True, "messages": [{"role": "user", "content": f"Sales by month, {HELD}"}]})
        readers = [pipeline, answer, chat]
        for reader in readers:
            reader.start()
        assert pipeline.saw("stage.checkpoint"), pipeline.frames  # paused: its stream stays open until a decision
        for _ in range(2):
            assert stub.arrived.acquire(timeout=60)  # both questions wait on the model
        assert answer.opened.wait(30) and chat.opened.wait(30)

        signalled = time.monotonic()
        os.killpg(server.process.pid, signal.SIGTERM)
        server.process.wait(timeout=30)  # a failure deadline: the streams' clients never leave by themselves
        took = time.monotonic() - signalled
        for reader in readers:
            reader.join(30)
            assert not reader.is_alive() and reader.error is None, reader.error
        return took, readers, server
    finally:
        stub.stop()
        server.stop()


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_ends_every_open_stream_with_a_final_event_and_the_server_exits(tmp_path, workers):
    """``--workers 2``: uvicorn's supervisor passes SIGTERM to each worker, whose streams end the same way."""
    took, (pipeline, answer, chat), server = stop_with_open_streams(tmp_path, workers)
    print(f"\nbaton serve --workers {workers} exited {took:.2f} s after SIGTERM with 3 streams open")
    for reader in (pipeline, answer):
        name, data = reader.frames[-1]
        assert name == "error" and json.loads(data)["error_code"] == "server_stopping", reader.frames[-3:]
    assert chat.frames[-1] == (None, "[DONE]")
    assert json.loads(chat.frames[-2][1])["error"]["code"] == "server_stopping"
    assert "Traceback" not in server.output, server.output[-3000:]


# --- the stream wrapper itself, in one process ----------------------------------------------------


async def _frames(source, shutdown, *, stop_after: str | None = None) -> list[str]:
    from baton.server.shutdown import until_shutdown

    out = []
    async for frame in until_shutdown(source, shutdown, lambda: "final"):
        out.append(frame)
        if frame == stop_after:
            threading.Thread(target=shutdown.begin).start()  # as a signal handler would: from outside the loop's code
    return out


async def test_a_stream_relays_its_frames_then_ends_with_the_final_one_and_its_source_is_cancelled():
    import asyncio

    from baton.server.shutdown import Shutdown

    cleaned = asyncio.Event()

    async def endless():
        try:
            yield "a"
            yield "b"
            await asyncio.Event().wait()  # a paused run: nothing more until a decision
        finally:
            cleaned.set()

    assert await _frames(endless(), Shutdown(), stop_after="b") == ["a", "b", "final"]
    assert cleaned.is_set()


async def test_a_stream_that_ends_by_itself_has_no_final_frame_and_its_failure_is_its_own():
    from baton.server.shutdown import Shutdown

    async def finite():
        yield "a"
        yield "b"

    async def broken():
        yield "a"
        raise ValueError("broke")

    assert await _frames(finite(), Shutdown()) == ["a", "b"]
    assert await _frames(finite(), None) == ["a", "b"]
    with pytest.raises(ValueError, match="broke"):
        await _frames(broken(), Shutdown())
    stopped = Shutdown()
    stopped.begin()
    assert (await _frames(finite(), stopped))[-1] == "final"  # opened while stopping: ends at once


async def test_a_thousand_open_streams_all_end_with_the_final_frame_when_the_server_stops():
    """Thousands of streams stay open on one worker: the signal ends each of them (its
    final frame, its source cancelled and cleaned up), none left holding the process. The
    wait is a failure bound, not a measurement."""
    import asyncio

    from baton.server.shutdown import Shutdown, until_shutdown

    shutdown = Shutdown()
    cleaned = 0
    opened = asyncio.Semaphore(0)

    async def endless(n: int):
        nonlocal cleaned
        try:
            yield f"open {n}"
            await asyncio.Event().wait()  # a model call that never answers
        finally:
            cleaned += 1

    async def client(n: int) -> list[str]:
        out = []
        async for frame in until_shutdown(endless(n), shutdown, lambda: "final"):
            out.append(frame)
            opened.release()  # its first frame was sent
        return out

    streams = [asyncio.ensure_future(client(n)) for n in range(1000)]
    for _ in streams:
        await opened.acquire()
    threading.Thread(target=shutdown.begin).start()  # as the signal handler does
    outcomes = await asyncio.wait_for(asyncio.gather(*streams), 120)
    assert all(frames == [f"open {n}", "final"] for n, frames in enumerate(outcomes))
    assert cleaned == 1000


async def test_a_source_faster_than_its_response_is_relayed_whole_and_in_order():
    """The source may run ahead of the response by a bounded number of frames, then waits."""
    import asyncio

    from baton.server.shutdown import Shutdown, until_shutdown

    produced = 0

    async def burst():
        nonlocal produced
        for i in range(500):
            produced = i + 1
            yield str(i)

    out = []
    async for frame in until_shutdown(burst(), Shutdown(), lambda: "final"):
        out.append(frame)
        assert produced - len(out) <= 64 + 1  # never more than its allowance ahead
        await asyncio.sleep(0)
    assert out == [str(i) for i in range(500)]
