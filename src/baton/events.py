"""Live progress: the events every step emits, and the tracker protocol that receives them.

The loop, agents, SQL attempts and pipeline stages all call ``tracker.emit(event)``. The
server streams them as Server-Sent Events; tests record them; OpenTelemetry exports them.
A tracker belongs to one request (it is carried by that request's context).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(slots=True)
class Event:
    """One thing that happened. ``type`` is a dotted name such as ``llm.start``,
    ``llm.end``, ``tool.start``, ``tool.end``, ``llm.token``, ``agent.routed``,
    ``sql.attempt``, ``stage.checkpoint``."""

    type: str
    data: dict[str, Any] = field(default_factory=dict)
    workflow_id: str | None = None
    ts: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "data": self.data, "workflow_id": self.workflow_id, "ts": self.ts}


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
        if event.type == "llm.end":
            for key, value in (event.data.get("usage") or {}).items():
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
