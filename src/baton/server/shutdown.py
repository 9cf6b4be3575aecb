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
        await self.until(asyncio.get_running_loop().create_future())

    async def until(self, waiter: asyncio.Future[None]) -> None:
        """Await ``waiter``, which the server starting to stop also resolves (no task of its
        own: an open stream waits with one future)."""
        with self._lock:
            if self._started:
                return
            self._waiters.add(waiter)
        try:
            await waiter
        finally:
            with self._lock:
                self._waiters.discard(waiter)


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
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
    relay = _Relay()
    producer = asyncio.create_task(relay.produce(source), name="stream-source")
    try:
        while not shutdown.started:  # stopping wins over a frame that arrived at the same moment
            if relay.frames:
                yield relay.take()
            elif producer.done():
                break
            else:
                await relay.next(shutdown)
        else:
            yield final()
            return
        failure = None if producer.cancelled() else producer.exception()
        if failure is not None:
            raise failure  # the route's own handler reports it in-band
    finally:
        if not producer.done():
            producer.cancel()
            with contextlib.suppress(BaseException):
                await producer


class _Relay:
    """One open stream's frames on their way from its source's task to the response: a list
    and one future at a time, which the source or the server stopping resolves. Thousands of
    streams stay open: a queue and a task of its own for the shutdown's wait cost about 5 KiB
    each, this a few hundred bytes."""

    __slots__ = ("frames", "_waiter", "_room")

    def __init__(self) -> None:
        self.frames: list[str] = []
        self._waiter: asyncio.Future[None] | None = None  # the response waits for a frame (or the end)
        self._room: asyncio.Future[None] | None = None  # the source waits for the response to catch up

    async def produce(self, source: AsyncIterator[str]) -> None:
        try:
            async for frame in source:
                self.frames.append(frame)
                _wake(self._waiter)
                if len(self.frames) >= _AHEAD:
                    self._room = asyncio.get_running_loop().create_future()
                    await self._room
        finally:
            _wake(self._waiter)  # its task is done before the response runs again

    def take(self) -> str:
        frame = self.frames.pop(0)
        _wake(self._room)
        return frame

    async def next(self, shutdown: Shutdown) -> None:
        """Until a frame arrives, the source ends, or the server starts stopping."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await shutdown.until(self._waiter)
        finally:
            self._waiter = None


_AHEAD = 64  # frames a source may produce before the response has sent them


def stopping_event() -> str:
    """The last event of a Baton event stream cut short by the server stopping."""
    from baton.server.errors import stream_error
    from baton.server.sse import sse

    return sse("error", stream_error("ServerStopping", STOPPING, STOPPING_DETAIL))
