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
    """Puts every event on an ``asyncio.Queue`` for a consumer (the SSE endpoint, ask_stream).
    ``close()`` puts ``None`` to mark the end."""

    def __init__(self, forward: WorkflowTracker | None = None) -> None:
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._forward = forward

    def emit(self, event: Event) -> None:
        self.queue.put_nowait(event)
        if self._forward is not None:
            self._forward.emit(event)

    def close(self) -> None:
        self.queue.put_nowait(None)


class FanOutTracker:
    """Sends each event to several trackers."""

    def __init__(self, *trackers: WorkflowTracker) -> None:
        self.trackers = trackers

    def emit(self, event: Event) -> None:
        for tracker in self.trackers:
            tracker.emit(event)
