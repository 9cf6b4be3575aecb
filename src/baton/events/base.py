"""``Event``: the base of every typed event, and the one serialiser between events and the
wire.

Each kind of event is a dataclass of its own (``baton.events.catalog``) whose class constant
``TYPE`` is the discriminator (``llm.start``, ``sql.attempt``, ...); its fields are the
payload. On the wire (Server-Sent Events, the OpenAI-compatible stream's ``baton.event``,
MCP progress, the page, the live bus and the durable event log) an event is one JSON object::

    {"type": "sql.attempt", "data": {"sql": "...", "attempt": 1, ...}, "workflow_id": "...", "ts": 1.7e9}

``Event.to_dict`` writes it and ``baton.events.wire.read_event`` reads it back as the typed
event (``event_of`` builds one from a type and a payload). Decisions:

- A field declared with ``omitted_when_none()`` is left out of ``data`` while it is None
  (``structured`` of ``mcp.call.end`` exists only on success), so the wire carries exactly
  what it carried when events were dictionaries.
- Keys a sender added beyond the type's fields (a stage's ``stage_id`` on the events of the
  agents inside it) travel in ``extra`` and are written back into ``data``.
- A payload that does not make its type (an unknown type, a required field missing: a live
  event the bus cut for size says ``truncated``) is read as a ``RawEvent`` that keeps type and
  data exactly as they came; consumers that read ``type`` and ``data`` treat both alike.
- Values are not converted: events carry JSON-ready values (numbers, strings, lists, dicts),
  which is what every emitter gives them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})
_OMIT = "baton_omit_when_none"
_ENVELOPE = frozenset({"workflow_id", "ts", "extra"})


def payload_fields(cls: type[Event]) -> tuple[tuple[str, bool], ...]:
    """``(name, omitted when None)`` of ``cls``'s payload fields, in declaration order."""
    return _payload_fields(cls)


def omitted_when_none() -> Any:
    """A payload field, None by default, that ``data`` leaves out while it is None."""
    return field(default=None, metadata={_OMIT: True})


@dataclass(slots=True, kw_only=True)
class Event:
    """Something that happened during a request (module docstring). ``type`` is the
    subclass's ``TYPE``; ``data`` the payload as the wire's dict."""

    TYPE: ClassVar[str] = ""

    workflow_id: str | None = None
    ts: float = field(default_factory=time.time)
    extra: Mapping[str, Any] = field(default_factory=lambda: _NO_EXTRA, repr=False)

    @property
    def type(self) -> str:
        return self.TYPE

    @property
    def data(self) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        for name, omit in _payload_fields(type(self)):
            value = getattr(self, name)
            if value is not None or not omit:
                payload[name] = value
        if self.extra:
            payload.update(self.extra)
        return payload

    def to_dict(self) -> dict[str, Any]:
        """The event as the wire has it (module docstring)."""
        return {"type": self.type, "data": self.data, "workflow_id": self.workflow_id, "ts": self.ts}


@dataclass(slots=True, kw_only=True)
class RawEvent(Event):
    """An event kept exactly as it came, for a payload that does not make its type (module
    docstring). ``name`` is its type."""

    name: str
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return self.name

    @property
    def data(self) -> dict[str, Any]:
        return dict(self.payload)


_FIELDS: dict[type[Event], tuple[tuple[str, bool], ...]] = {}


def _payload_fields(cls: type[Event]) -> tuple[tuple[str, bool], ...]:
    """``(name, omitted when None)`` of ``cls``'s payload fields, in declaration order.
    Cached in a plain dict: mypy takes a class passed to ``functools.cache`` for one of its
    (unhashable, ``eq=True``) instances."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(
            (f.name, bool(f.metadata.get(_OMIT))) for f in dataclasses.fields(cls) if f.name not in _ENVELOPE
        )
    return found
