"""Live events over Redis pub/sub: ``BATON_EVENTS_URL=redis://[:password@]host:6379/0`` (or
``rediss://`` for TLS). Same contract as ``PostgresBus`` (``bus.py``): ``publish`` never blocks
and never raises, ``subscribe`` is an async iterator of a channel's events from now on.

Choices, and why:

- **Publishing goes through a bounded queue read by one thread**, not a ``PUBLISH`` in the
  caller: redis-py is blocking, and a Redis that hangs (a partitioned network) would stall a
  stage's event loop for a socket timeout per event. The thread holds one connection (short
  connect and read timeouts); when Redis is away it retries with backoff, events wait in the
  queue (bounded: past it they are dropped, counted, logged once per outage) and go out in
  order once Redis answers again.
- **One Redis channel per Baton channel** (``baton:events:<run id>``), and each process keeps
  one connection with one pattern subscription (``PSUBSCRIBE baton:events:*``) read by one
  thread that hands each message to its channel's subscribers. A new subscriber costs no
  round trip, so ``subscribe`` never waits on Redis except for the process's very first one;
  ``redis-cli subscribe baton:events:<run id>`` watches one run. Pub/sub ignores Redis'
  database number: deployments sharing a server share traffic, not events (run ids differ).
- **Reconnection**: a lost connection (refused, reset, or silent: a ``PING`` left unanswered
  for the read timeout) is dropped and opened again with backoff (0.1 s doubling to 5 s),
  logged once when it goes and once when it comes back. Pub/sub keeps nothing: events sent
  while a subscriber was disconnected are not replayed to it; a surface that must not miss
  one reads the run's numbered event log (``DurablePipelines.events`` does: a gap in the
  numbers, or a second of silence, sends it there).
- **Bounded payloads**: an event over ``MAX_REDIS_PAYLOAD`` is cut down (long values replaced
  by a note, ``bus.shrink``) rather than dropped; a received message that is larger, is not
  JSON, or is not ``{"event": {...}}`` is ignored with a log line (anyone who can reach the
  server can publish on the channel).
- **Start-up**: ``check()`` (``bus_for`` calls it) pings the server with a short timeout and
  raises ``EventBusUnavailableError`` when it does not answer: a replica that cannot relay
  events would pass its health check and leave every live stream silent, and a process
  manager restarts a process that refused to start. Later outages degrade (logged, retried)
  rather than fail requests: events are progress.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.client import PubSub
from redis.retry import Retry

from baton.errors import ConfigurationError
from baton.state.bus import Subscription, _Fanout, shrink

log = logging.getLogger("baton.state.bus")
CHANNEL_PREFIX = "baton:events:"
MAX_REDIS_PAYLOAD = 64 * 1024  # bytes; Redis takes far more, but an SSE client wants progress, not a result set
CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 5.0
HEALTH_CHECK_S = 15.0  # an idle subscriber connection PINGs this often to find a silent network
BACKOFF_S = (0.1, 5.0)
_numbers = itertools.count(1)


class EventBusUnavailableError(ConfigurationError):
    """Raised at start-up when ``BATON_EVENTS_URL`` names a Redis server that does not answer
    (or refuses the credentials) within a couple of seconds."""


def redacted(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + host))


class RedisBus(_Fanout):
    """Redis pub/sub (see the module docstring)."""

    def __init__(self, url: str, *, prefix: str = CHANNEL_PREFIX, max_payload: int = MAX_REDIS_PAYLOAD,
                 outbox_size: int = 10_000, health_check_s: float = HEALTH_CHECK_S, read_timeout_s: float = READ_TIMEOUT_S) -> None:
        super().__init__()
        self.url = url
        self.prefix = prefix
        self.max_payload = max_payload
        self.health_check_s = health_check_s
        self.read_timeout_s = read_timeout_s
        # CLIENT LIST shows which process holds which connection (and tests find theirs)
        self.client_name = f"baton-bus-{os.getpid()}-{next(_numbers)}"
        self._outbox: queue.Queue[tuple[str, str] | None] = queue.Queue(maxsize=outbox_size)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._start_lock = threading.Lock()
        self._publisher_started = False
        self._listener_started = False
        self._first_attempt = threading.Event()  # the listener has connected, or failed to, once
        self.listening = threading.Event()  # subscribed now
        self.dropped = 0  # events the full queue refused

    def _client(self, timeout: float | None = None) -> redis.Redis:
        # no retries inside redis-py: the threads own reconnection (and its backoff)
        return redis.Redis.from_url(self.url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=timeout or self.read_timeout_s,
                                    socket_keepalive=True, health_check_interval=0, client_name=self.client_name,
                                    retry=Retry(NoBackoff(), 0))

    def check(self) -> RedisBus:
        """Ping the server once, with short timeouts; ``EventBusUnavailableError`` if it does not answer."""
        client: redis.Redis | None = None
        try:
            client = self._client(timeout=CONNECT_TIMEOUT_S)
            client.ping()
        except (redis.RedisError, OSError, ValueError) as exc:  # ValueError: a URL redis-py cannot read
            raise EventBusUnavailableError(
                f"BATON_EVENTS_URL: the Redis server at {redacted(self.url)} did not answer ({type(exc).__name__}: {exc}). "
                "Start it (redis-cli -u URL ping should say PONG), or unset BATON_EVENTS_URL to carry events on "
                "the PostgreSQL state database") from exc
        finally:
            _close(client)
        return self

    # --- publishing: callers fill the outbox, one thread sends ---------------------------------

    def publish(self, channel: str, event: dict[str, Any]) -> None:
        if self._stop.is_set():
            return
        try:
            self._ensure_thread("publisher")
            self._outbox.put_nowait((self.prefix + channel, shrink({"event": event}, self.max_payload)))
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("event bus queue full (Redis unreachable?): %d event(s) dropped so far", self.dropped)
        except Exception:  # an event that cannot be serialised: losing it beats failing the run
            log.warning("an event of %s could not be published", channel, exc_info=True)

    def _send_loop(self) -> None:
        client: redis.Redis | None = None
        item: tuple[str, str] | None = None
        backoff, down = BACKOFF_S[0], False
        while True:
            if item is None:
                if self._stop.is_set() and self._outbox.empty():
                    break
                item = self._outbox.get()
                if item is None:
                    break
            try:
                if client is None:
                    client = self._client()
                client.publish(*item)
                item = None
                if down:
                    log.warning("event bus: Redis answers again; publishing resumed")
                    backoff, down = BACKOFF_S[0], False
            except Exception as exc:
                _close(client)
                client = None
                if not down:
                    log.warning("event bus: publishing to Redis at %s failed (%s); retrying, events wait in the queue",
                                redacted(self.url), exc)
                    down = True
                if self._stop.wait(backoff):
                    break
                backoff = min(backoff * 2, BACKOFF_S[1])
        _close(client)

    # --- listening: one connection, one pattern, one thread, for every subscriber --------------

    def subscribe(self, channel: str) -> Subscription:
        sub = Subscription(self, channel)
        if self._ensure_thread("listener"):
            # the process's first subscriber waits for the pattern subscription (once; ms on
            # a live server, at once on a refused one, CONNECT_TIMEOUT_S at most on a hung
            # network), so that what is published after subscribe() returns reaches it
            self._first_attempt.wait(CONNECT_TIMEOUT_S)
        return sub

    def _listen_loop(self) -> None:
        backoff, down = BACKOFF_S[0], False
        while not self._stop.is_set():
            client: redis.Redis | None = None
            pubsub: PubSub | None = None
            try:
                client = self._client()
                pubsub = PubSub(client.connection_pool)  # what client.pubsub() builds; that one is unannotated
                pubsub.psubscribe(self.prefix + "*")
                self._until_subscribed(pubsub)
                self.listening.set()
                self._first_attempt.set()
                if down:
                    log.warning("event bus: Redis answers again; receiving events")
                    down = False
                backoff = BACKOFF_S[0]
                self._read(pubsub)
            except Exception as exc:
                self.listening.clear()
                self._first_attempt.set()
                if self._stop.is_set():
                    break
                if not down:
                    log.warning("event bus: the Redis connection at %s is lost (%s); reconnecting", redacted(self.url), exc)
                    down = True
                self._stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_S[1])
            finally:
                self.listening.clear()
                _close(pubsub)
                _close(client)

    def _until_subscribed(self, pubsub: PubSub) -> None:
        deadline = time.monotonic() + self.read_timeout_s
        while not self._stop.is_set():
            message = pubsub.get_message(timeout=0.2)
            if message is not None and message.get("type") == "psubscribe":
                return
            if time.monotonic() > deadline:
                raise TimeoutError("Redis did not confirm the subscription")

    def _read(self, pubsub: PubSub) -> None:
        heard, pinged = time.monotonic(), 0.0
        while not self._stop.is_set():
            message = pubsub.get_message(timeout=0.5)
            now = time.monotonic()
            if message is not None:
                heard, pinged = now, 0.0
                if message.get("type") == "pmessage":
                    self._received(message.get("channel"), message.get("data"))
            elif pinged and now - pinged > self.read_timeout_s:
                raise TimeoutError(f"no answer to a PING in {self.read_timeout_s:g} s")
            elif not pinged and now - heard > self.health_check_s:
                pubsub.ping()
                pinged = now

    def _received(self, channel: object, payload: object) -> None:
        """One message from Redis; whatever is wrong with it is logged and skipped."""
        try:
            if not isinstance(channel, bytes) or not isinstance(payload, bytes):
                raise ValueError(f"unexpected message types {type(channel).__name__}, {type(payload).__name__}")
            if len(payload) > self.max_payload:
                raise ValueError(f"{len(payload)} bytes, over the {self.max_payload}-byte limit")
            message = json.loads(payload)
            event = message.get("event") if isinstance(message, dict) else None
            if not isinstance(event, dict):
                raise ValueError("not an {\"event\": {...}} object")
            name = channel.decode()
        except Exception as exc:
            log.warning("an event bus message on %r was ignored: %s", channel[:200] if isinstance(channel, bytes) else channel,
                        str(exc)[:200])
            return
        self._dispatch(name.removeprefix(self.prefix), event)

    # --- threads -----------------------------------------------------------------------------

    def _ensure_thread(self, which: str) -> bool:
        """Start the publisher or the listener once; True when this call started it."""
        with self._start_lock:
            if self._stop.is_set():
                return False
            if which == "publisher" and not self._publisher_started:
                self._publisher_started = True
                self._start(self._send_loop, "baton-bus-redis-publish")
                return True
            if which == "listener" and not self._listener_started:
                self._listener_started = True
                self._start(self._listen_loop, "baton-bus-redis-listen")
                return True
        return False

    def _start(self, target: Callable[[], object], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def close(self) -> None:
        """Stop both threads (what is queued goes out first if Redis answers) and close the connections."""
        with self._start_lock:
            self._stop.set()
        try:
            self._outbox.put_nowait(None)
        except queue.Full:
            pass  # the publisher is busy: it stops when the queue is empty
        for thread in self._threads:
            thread.join(CONNECT_TIMEOUT_S + self.read_timeout_s)
        self._threads.clear()


def _close(resource: Any) -> None:
    if resource is not None:
        try:
            resource.close()
        except Exception:
            log.debug("closing a Redis connection failed", exc_info=True)
