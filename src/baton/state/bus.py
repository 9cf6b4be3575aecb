"""Live events between processes: what a worker's pipeline run emits reaches the SSE client
of whichever replica the client is connected to.

``publish(channel, event)`` never blocks the caller (a stage's agents emit from inside the
run) and never raises: events are progress, and losing one is better than failing a run.
``subscribe(channel)`` is an async iterator of the channel's events from now on; a
surface that also needs what happened earlier subscribes first, then reads the run's
numbered event log (``baton.pipeline.durable.run_log``: a worker stores each event before it
publishes it) and merges the two by sequence number (``DurablePipelines.events``).

- ``LocalBus``: one process (the embedded default, where the run executes in the serving
  process).
- ``PostgresBus``: ``NOTIFY`` on the state database; each process keeps one ``LISTEN``
  connection, read by one thread, and hands each notification to the subscribers of its
  channel. A payload over PostgreSQL's 8000-byte limit is cut down (long values replaced
  by a note) rather than dropped. No broker to run: the state database is the bus.
- ``RedisBus`` (``bus_redis.py``): Redis pub/sub when ``BATON_EVENTS_URL`` is a ``redis://``
  or ``rediss://`` URL, for a deployment that already runs Redis or whose event traffic
  should stay off the state database.

``baton.workspace.pipeline_host.bus_for`` picks one from the state and ``BATON_EVENTS_URL``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from baton.outages import is_outage, outage

log = logging.getLogger("baton.state.bus")
EVENT_BUS_DOWN = "the event bus (PostgreSQL)"
PG_CHANNEL = "baton_events"
MAX_PAYLOAD = 7900  # PostgreSQL refuses NOTIFY payloads of 8000 bytes or more
MAX_VALUE = 500


class EventBus(Protocol):
    def publish(self, channel: str, event: dict[str, Any]) -> None: ...

    def subscribe(self, channel: str) -> Subscription: ...

    def close(self) -> None: ...


class Subscription:
    """One subscriber's events (async iterator); ``close()`` (or leaving ``async with``)
    stops delivery."""

    def __init__(self, bus: _Fanout, channel: str) -> None:
        self._bus = bus
        self.channel = channel
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        bus._add(self)

    def deliver(self, event: dict[str, Any]) -> None:
        """From any thread."""
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)
        except RuntimeError:  # the subscriber's loop is gone
            self.close()

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self

    async def __anext__(self) -> dict[str, Any]:
        return await self.queue.get()

    def get_nowait(self) -> dict[str, Any] | None:
        """The next event already delivered, or None."""
        return None if self.queue.empty() else self.queue.get_nowait()

    async def get(self, timeout: float | None = None) -> dict[str, Any] | None:
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None

    def close(self) -> None:
        self._bus._remove(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class _Fanout:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}
        self._lock = threading.Lock()

    def _add(self, sub: Subscription) -> None:
        with self._lock:
            self._subscribers.setdefault(sub.channel, set()).add(sub)

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            subs = self._subscribers.get(sub.channel)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subscribers[sub.channel]

    def _dispatch(self, channel: str, event: dict[str, Any]) -> None:
        with self._lock:
            subs = list(self._subscribers.get(channel, ()))
        for sub in subs:
            sub.deliver(event)


class LocalBus(_Fanout):
    """Events within one process."""

    def publish(self, channel: str, event: dict[str, Any]) -> None:
        self._dispatch(channel, event)

    def subscribe(self, channel: str) -> Subscription:
        return Subscription(self, channel)

    def close(self) -> None:
        return None


def shrink(message: dict[str, Any], limit: int = MAX_PAYLOAD) -> str:
    """The message as JSON under ``limit`` bytes: long values cut, the cut noted."""
    text = json.dumps(message, default=str)
    if len(text.encode()) <= limit:
        return text
    event = dict(message.get("event") or {})
    data = {k: (v if len(json.dumps(v, default=str)) <= MAX_VALUE else f"[{type(v).__name__} too large for a live event]")
            for k, v in dict(event.get("data") or {}).items()}
    event["data"] = {**data, "truncated": True}
    text = json.dumps({**message, "event": event}, default=str)
    if len(text.encode()) <= limit:
        return text
    event["data"] = {"truncated": True}
    return json.dumps({**message, "event": event}, default=str)


class PostgresBus(_Fanout):
    """``NOTIFY``/``LISTEN`` on the state database (see the module docstring)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self._outbox: queue.Queue[tuple[str, str] | None] = queue.Queue(maxsize=10_000)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._started_listening = False
        self._listening = threading.Event()
        self._start_lock = threading.Lock()
        self._publisher_started = False

    def _conninfo(self) -> str:
        import sqlalchemy as sa

        url = sa.make_url(self.url).set(drivername="postgresql")
        return url.render_as_string(hide_password=False)

    # publishing: one thread sends what callers put in the outbox
    def publish(self, channel: str, event: dict[str, Any]) -> None:
        if self._stop.is_set():
            return
        with self._start_lock:
            if not self._publisher_started:
                self._start(self._send_loop, "baton-bus-publish")
                self._publisher_started = True
        try:
            self._outbox.put_nowait((channel, shrink({"channel": channel, "event": event})))
        except queue.Full:
            log.warning("event bus outbox full: an event of %s was dropped", channel)

    def _send_loop(self) -> None:
        import psycopg

        conn = None
        while True:
            item = self._outbox.get()
            if item is None:
                break
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self._conninfo(), autocommit=True)
                conn.execute("SELECT pg_notify(%s, %s)", (PG_CHANNEL, item[1]))
            except Exception as exc:
                if is_outage(exc):
                    outage(EVENT_BUS_DOWN, log).failed(exc)  # one line per outage (baton.outages)
                else:
                    log.warning("publishing an event failed", exc_info=True)
                if conn is not None:
                    conn.close()
                conn = None
            else:
                outage(EVENT_BUS_DOWN, log).ok()
        if conn is not None:
            conn.close()

    # listening: one connection, one thread, for every subscriber of this process
    def subscribe(self, channel: str) -> Subscription:
        sub = Subscription(self, channel)
        with self._start_lock:
            if not self._started_listening:
                self._start(self._listen_loop, "baton-bus-listen")
                self._started_listening = True
        self._listening.wait(10)
        return sub

    def _listen_loop(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo(), autocommit=True) as conn:
                    conn.execute(f"LISTEN {PG_CHANNEL}")
                    self._listening.set()
                    outage(EVENT_BUS_DOWN, log).ok()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._received(note.payload)
            except Exception as exc:
                if self._stop.is_set():
                    return
                if is_outage(exc):
                    outage(EVENT_BUS_DOWN, log).failed(exc)  # reconnecting every second: one line, not one a try
                else:
                    log.warning("event bus connection lost; reconnecting", exc_info=True)
                self._stop.wait(1.0)

    def _received(self, payload: str) -> None:
        try:
            message = json.loads(payload)
            self._dispatch(message["channel"], message["event"])
        except Exception:
            log.warning("an event bus message could not be read", exc_info=True)

    def _start(self, target: Callable[[], object], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def close(self) -> None:
        self._stop.set()
        if self._publisher_started:
            self._outbox.put(None)
        for thread in self._threads:
            thread.join(5)
        self._threads.clear()
