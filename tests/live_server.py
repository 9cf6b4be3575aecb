"""Run an ASGI app on a real socket (uvicorn in a thread) for SDK and browser tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from baton.cli.quiet_server import QuietServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(config: uvicorn.Config) -> Iterator[int]:
    """A uvicorn server of ``config`` in a thread until the block ends: its port."""
    server = QuietServer(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.01)
    try:
        yield config.port
    finally:
        server.should_exit = True
        thread.join(5)


@contextmanager
def serve(app, **options) -> Iterator[str]:
    """``app`` on a real socket (uvicorn's ``options`` as ``baton serve`` passes them): its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning", lifespan="off", **options)
    with running(config) as port:
        yield f"http://127.0.0.1:{port}"
