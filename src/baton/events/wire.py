"""Reading events back from the wire: the other half of ``Event.to_dict`` (``base.py`` says
how an event is written, and when a payload is kept as a ``RawEvent``)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from baton.events.base import Event, RawEvent, payload_fields
from baton.events.catalog import EVENT_TYPES


def event_of(type: str, data: Mapping[str, Any] | None = None, workflow_id: str | None = None, *,
             ts: float | None = None) -> Event:
    """The event named ``type`` with payload ``data``: its typed class when the payload makes
    one, else a ``RawEvent``."""
    payload = dict(data or {})
    stamp = time.time() if ts is None else ts
    cls = EVENT_TYPES.get(type)
    if cls is not None:
        names = {name for name, _ in payload_fields(cls)}
        known = {k: v for k, v in payload.items() if k in names}
        extra = {k: v for k, v in payload.items() if k not in names}
        try:
            return cls(**known, workflow_id=workflow_id, ts=stamp, extra=MappingProxyType(extra))
        except TypeError:  # a required field is missing (a payload cut for size): keep it as it came
            pass
    return RawEvent(name=type, payload=payload, workflow_id=workflow_id, ts=stamp)


def read_event(raw: Mapping[str, Any]) -> Event:
    """The typed event of a wire dict (``{"type", "data", "workflow_id", "ts"}``; other keys,
    such as the durable log's ``id``, are ignored)."""
    ts = raw.get("ts")
    data = raw.get("data")
    return event_of(str(raw.get("type") or "?"), data if isinstance(data, Mapping) else {}, raw.get("workflow_id"),
                    ts=float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None)
