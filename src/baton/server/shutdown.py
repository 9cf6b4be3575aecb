"""Stopping with streams open: every long-lived stream ends with a final event within moments
of SIGTERM, instead of holding the process until its client leaves.

uvicorn, told to stop, closes its listening socket and then waits for every open response to
finish; the app's lifespan shutdown only comes after that. An event stream (a pipeline's
events, a streamed answer, an OpenAI-style streamed completion) never finishes by itself, so
without this a SIGTERM waited for the client (40–58 s were seen). So:

- ``Shutdown`` is the app's "the server is stopping" flag (``app.state.shutdown``);
  ``watch_signals`` chains it before uvicorn's own SIGTERM/SIGINT handlers in the serving
  process (``baton.cli.serving``), so it is set the moment the signal arrives, before uvicorn
  starts waiting for connections. The lifespan's shutdown sets it too.
- ``until_shutdown`` wraps a stream's frames: the source runs in one task of its own (its
  timeouts and cancel scopes stay in one task), the response relays what it produces, and
  when the flag is set the source is cancelled and the stream ends with ``final()``: a typed
  event saying the server is stopping and that reconnecting (to any replica) is safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

STOPPING = "server_stopping"
STOPPING_DETAIL = "the server is stopping; reconnect (any replica can serve this) or ask again"
_DONE = object()


class Shutdown:
    """Set once when the server starts stopping; awaited by open streams. Safe to set from a
    signal handler or another thread, and awaited from any event loop (no loop is bound)."""

    def __init__(self) -> None:
        self._started = False
        self._waiters: set[asyncio.Future[None]] = set()
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._started

    def begin(self) -> None:
        with self._lock:
            self._started = True
            waiters = list(self._waiters)
        for waiter in waiters:
            with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits any more
                waiter.get_loop().call_soon_threadsafe(_wake, waiter)

    async def wait(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._started:
                return
            self._waiters.add(waiter)
        try:
            await waiter
        finally:
            with self._lock:
                self._waiters.discard(waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def watch_signals(shutdown: Shutdown) -> None:
    """Set ``shutdown`` on SIGTERM/SIGINT, then let the handler already there (uvicorn's) run.
    Called once the server has started, in the serving process's main thread (a no-op anywhere
    else: signals only reach the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: Any, previous: Any = previous) -> None:
            shutdown.begin()
            if callable(previous):
                previous(signum, frame)

        signal.signal(sig, handler)


async def until_shutdown(source: AsyncIterator[str], shutdown: Shutdown | None, final: Callable[[], str]) -> AsyncIterator[str]:
    """``source``'s frames until it ends, or until ``shutdown`` starts: then ``final()`` last."""
    if shutdown is None:
        async for frame in source:
            yield frame
        return
    frames: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)

    async def produce() -> None:
        try:
            async for frame in source:
                await frames.put(frame)
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                frames.put_nowait(_DONE)  # a full queue is read on: the consumer finds the task done

    producer = asyncio.create_task(produce(), name="stream-source")
    stopping = asyncio.create_task(shutdown.wait(), name="stream-shutdown")
    try:
        while True:
            if frames.empty() and producer.done():
                break
            getting = asyncio.ensure_future(frames.get())
            await asyncio.wait({getting, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if stopping.done():  # stopping wins over a frame that arrived at the same moment
                getting.cancel()
                yield final()
                return
            frame = getting.result()
            if frame is _DONE:
                break
            yield frame
        await asyncio.wait({producer})  # it has sent its last frame: its end (or its failure) is a moment away
        failure = None if producer.cancelled() else producer.exception()
        if failure is not None:
            raise failure  # the route's own handler reports it in-band
    finally:
        stopping.cancel()
        if not producer.done():
            producer.cancel()
            with contextlib.suppress(BaseException):
                await producer


def stopping_event() -> str:
    """The last event of a Baton event stream cut short by the server stopping."""
    from baton.server.sse import sse

    return sse("error", {"error": "ServerStopping", "error_code": STOPPING, "detail": STOPPING_DETAIL})
