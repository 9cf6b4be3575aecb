"""How long a request waited on its dependencies (a model, a database, a store), kept per request.

Why: admission control (``baton.server.delays``) must tell the delay this process adds to an
answer from the time the answer spent on others. A question that waits 10 s on its model
is not a sign of load; one whose own steps took 400 ms beyond its model's answer is.
So each place that hands work to a dependency times it (``waiting_on_dependency`` around an
await, ``timed_in_thread`` around a call that a thread runs), and the server reads the total
per request (``DependencyWaits.seconds``).

Waits that overlap count once. What a thread spends queued for a free worker, and the hop back to the
event loop, are not counted: that delay is this process's own load. Outside a request
(``track`` not called) nothing is kept and the timing costs one context lookup.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["DependencyWaits", "stop_tracking", "timed_chunks", "timed_in_thread", "track", "untracked", "waiting_on_dependency"]


class DependencyWaits:
    """One request's waits: the seconds during which at least one dependency call of it was in
    progress (the union of its waits: concurrent calls, as two specialists asked at once, and
    nested ones count once)."""

    __slots__ = ("_lock", "_open", "_since", "seconds")

    def __init__(self) -> None:
        self.seconds = 0.0
        self._open = 0
        self._since = 0.0
        self._lock = threading.Lock()  # threads' waits end on their own threads

    def begin(self) -> None:
        with self._lock:
            if not self._open:
                self._since = time.perf_counter()
            self._open += 1

    def end(self) -> None:
        with self._lock:
            self._open -= 1
            if not self._open:
                self.seconds += time.perf_counter() - self._since


_CURRENT: contextvars.ContextVar[DependencyWaits | None] = contextvars.ContextVar("baton_dependency_waits", default=None)


def track() -> tuple[DependencyWaits, contextvars.Token]:
    """Start keeping this request's waits (the server, per request); ``stop_tracking(token)`` ends it."""
    waits = DependencyWaits()
    return waits, _CURRENT.set(waits)


def stop_tracking(token: contextvars.Token) -> None:
    _CURRENT.reset(token)


@contextlib.contextmanager
def waiting_on_dependency() -> Iterator[None]:
    """Count the time inside as waited on a dependency (an SDK call, a stream's chunks)."""
    waits = _CURRENT.get()
    if waits is None:
        yield
        return
    waits.begin()
    try:
        yield
    finally:
        waits.end()


def timed_in_thread(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` as a thread should run it for this request: its run time counted as waited
    (the request is read here, on the event loop's side: the thread has no context of it)."""
    waits = _CURRENT.get()
    if waits is None:
        return fn

    def timed(*args: Any) -> T:
        waits.begin()
        try:
            return fn(*args)
        finally:
            waits.end()

    return timed


async def timed_chunks(stream: AsyncIterable[T]) -> AsyncIterator[T]:
    """``stream``'s items, the wait for each counted (not what the consumer does between them)."""
    items = aiter(stream)
    while True:
        with waiting_on_dependency():
            try:
                item = await anext(items)
            except StopAsyncIteration:
                return
        yield item


def untracked() -> None:
    """Keep no request's waits in this context from here: for a task that serves many requests
    (a group commit's drain), whose waits are none of the request's that happened to start it."""
    _CURRENT.set(None)
