"""``QuietServer``: uvicorn's server on a 1 s tick, which a stop request cuts short."""

from __future__ import annotations

import threading
import time

import httpx
import uvicorn

from baton.cli import quiet_server
from baton.cli.quiet_server import QuietServer
from live_server import free_port


async def _hello(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello"})


class _Counting(QuietServer):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ticks: list[int] = []

    async def on_tick(self, counter: int) -> bool:
        self.ticks.append(counter)
        return await super().on_tick(counter)


def _started(server: QuietServer) -> threading.Thread:
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    return thread


def _config() -> uvicorn.Config:
    return uvicorn.Config(_hello, host="127.0.0.1", port=free_port(), log_level="warning", lifespan="off")


def test_a_stop_request_ends_the_tick_at_once(monkeypatch):
    """With an hour-long tick, the server still stops when told to from another thread (as a
    test harness does; uvicorn's signal handler sets the same flag): the flag wakes the loop."""
    monkeypatch.setattr(quiet_server, "TICK_S", 3600.0)
    server = QuietServer(_config())
    thread = _started(server)
    assert httpx.get(f"http://127.0.0.1:{server.config.port}/").text == "hello"
    server.should_exit = True
    thread.join(60)
    assert not thread.is_alive(), "the stop request did not wake the server's tick"


def test_every_tick_renews_the_date_header(monkeypatch):
    """uvicorn renews its ``date`` header on ticks whose counter is a multiple of ten: each of
    ours is one, so the header is at most a tick old."""
    monkeypatch.setattr(quiet_server, "TICK_S", 0.01)
    server = _Counting(_config())
    thread = _started(server)
    deadline = time.monotonic() + 30
    while len(server.ticks) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    response = httpx.get(f"http://127.0.0.1:{server.config.port}/")
    server.should_exit = True
    thread.join(60)
    assert len(server.ticks) >= 4 and all(counter % 10 == 0 for counter in server.ticks)
    assert server.ticks[:3] == [0, 10, 20]
    assert "date" in response.headers and not thread.is_alive()
