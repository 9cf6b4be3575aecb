"""The tracker protocol that receives events, and the trackers Baton ships.

The loop, agents, SQL attempts and pipeline stages all call ``tracker.emit(event)``. The
server streams them as Server-Sent Events; tests record them; OpenTelemetry exports them.
A tracker belongs to one request (it is carried by that request's context).
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from baton.events.base import Event
from baton.events.catalog import LLMEnd


@runtime_checkable
class WorkflowTracker(Protocol):
    """Receives events. ``emit`` must not block and must not raise."""

    def emit(self, event: Event) -> None: ...


class NullTracker:
    """Drops every event (the default when nobody is listening)."""

    def emit(self, event: Event) -> None:
        return None


NULL_TRACKER = NullTracker()


class RecordingTracker:
    """Keeps every event in order, and accumulates token usage from ``llm.end`` events."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.usage: dict[str, int] = {}

    def emit(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, LLMEnd):
            for key, value in event.usage.items():
                if isinstance(value, int):
                    self.usage[key] = self.usage.get(key, 0) + value

    def types(self) -> list[str]:
        return [e.type for e in self.events]


class QueueTracker:
    """Puts every event on a queue (``EventLine``) for a consumer (the SSE endpoint,
    ask_stream). ``close()`` puts ``None`` to mark the end."""

    __slots__ = ("queue", "_forward")

    def __init__(self, forward: WorkflowTracker | None = None) -> None:
        self.queue = EventLine()
        self._forward = forward

    def emit(self, event: Event) -> None:
        self.queue.put_nowait(event)
        if self._forward is not None:
            self._forward.emit(event)

    def close(self) -> None:
        self.queue.put_nowait(None)


class EventLine:
    """An unbounded queue with one consumer: what ``QueueTracker`` needs of ``asyncio.Queue``
    (``put_nowait``, ``get``, ``get_nowait``, ``empty``, ``qsize``). Every open stream holds
    one for its whole life, waiting on its model: ``asyncio.Queue`` costs about 2.5 KiB (three
    deques and an event, by tracemalloc), this a list and at most one future."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: list[Event | None] = []
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Event | None) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def get_nowait(self) -> Event | None:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.pop(0)

    async def get(self) -> Event | None:
        while not self._items:
            if self._waiter is not None:
                raise RuntimeError("EventLine has one consumer")
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.pop(0)

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


class FanOutTracker:
    """Sends each event to several trackers."""

    def __init__(self, *trackers: WorkflowTracker) -> None:
        self.trackers = trackers

    def emit(self, event: Event) -> None:
        for tracker in self.trackers:
            tracker.emit(event)
