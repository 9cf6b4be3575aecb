"""Connections: how long a client may take to send a request's headers, and how many
connections one process keeps open.

uvicorn (0.30-0.59) has neither: its keep-alive timer runs only between requests, so a
connection that never sends a byte, or trickles a header a byte at a time, is held for
ever; ``limit_concurrency`` answers a plain 503 (no ``Retry-After``) per request once
connections *or* tasks pass it, and closes nothing. h11 and httptools only parse. So
``BatonHttpProtocol`` (uvicorn's httptools protocol, given to uvicorn as ``http=``) adds:

- **Header timeout** (``limits.header_timeout_s``, ``BATON_HEADER_TIMEOUT``, 10 s): from a
  connection's opening, and from the first byte of each further request on it, the headers
  must be complete within the timeout; else the connection gets a 408 and is closed.
  The body has its own timeout (``guard.py``, ``BATON_BODY_TIMEOUT``); idle keep-alive is
  uvicorn's ``timeout_keep_alive``.
- **Connection limit** (``connection_limit``: ``BATON_MAX_CONNECTIONS``, else admission's
  hard cap and a quarter, within the open-files limit): a connection past it is answered
  503 with ``Retry-After`` and ``error_code: overloaded`` on its first request, and closed.
  The limit sits above admission's cap on purpose: admission (``admission.py``) decides
  who is served, with its own ``Retry-After``; the socket layer only stops what admission
  could not see (connections that hold no question).

- **Lean waits**: uvicorn gives every connection an ``asyncio.Event`` for its writes
  (``FlowControl``) and every request one for its messages; an asyncio Event holds a deque
  (about 700 B). Thousands of open streams each hold both for their whole life, so here
  they are ``Signal`` (a flag and a list of waiters, made when someone waits); its queue of
  pipelined requests, a deque too, is a ``Pipeline`` (a list: rarely more than one entry).

Behind a reverse proxy (README "Running Baton at scale") the proxy's own header timeout and
connection limits come first; these are the process's own floor when it is exposed directly.
"""

from __future__ import annotations

import asyncio
import json
import resource
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from baton.server.admission import RETRY_AFTER_S
from baton.server.limits import Limits

FD_RESERVE = 64  # open files kept for everything but client connections (stores, logs, the model's connections)
_limits: Limits | None = None


def open_files_limit() -> int:
    """The soft limit on open files (``ulimit -n``)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def raise_open_files(wanted: int) -> int:
    """Raise the soft open-files limit towards ``wanted`` (at most the hard limit); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft
        return target
    return soft


def connection_limit(limits: Limits) -> int:
    """Connections one process keeps open: ``max_connections``, else the cap and a quarter;
    never more than the open files allow."""
    wanted = limits.max_connections or limits.max_in_flight + limits.max_in_flight // 4
    return max(1, min(wanted, open_files_limit() - FD_RESERVE))


def _process_limits(config: Any) -> Limits:
    global _limits
    given = getattr(config, "baton_limits", None)
    if given is not None:
        return given
    if _limits is None:
        _limits = Limits.from_env()
    return _limits


async def _over_the_limit(scope: Any, receive: Any, send: Any) -> None:
    """The 503 of a connection past the limit (admission's shape), and the connection closed."""
    from baton.server.errors import OPENAI_PATHS, overloaded_body

    body = json.dumps(overloaded_body(str(scope.get("path", "")).startswith(OPENAI_PATHS))).encode()
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_S).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 43\r\nconnection: close\r\n\r\n" \
            b"the request headers did not arrive in time\n"


class BatonHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header timeout and a connection limit (module docstring)."""

    def __init__(self, config: Any, server_state: Any, app_state: dict[str, Any], _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        limits = _process_limits(config)
        self.header_timeout_s = limits.header_timeout_s
        self.max_connections = connection_limit(limits)
        self._header_timer: asyncio.TimerHandle | None = None
        self.pipeline = Pipeline()  # type: ignore[assignment]  # (module docstring: lean waits)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.flow._is_writable_event = Signal(True)  # type: ignore[assignment]  # (module docstring: lean waits)
        if len(self.connections) > self.max_connections:
            self.app = _over_the_limit  # its first request is answered 503 and the connection closed
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not None and self.cycle is not before:  # a new request's: nothing waits on it yet (lean waits)
            self.cycle.message_event = Signal(self.cycle.message_event.is_set())  # type: ignore[assignment]

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_timed_out)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm()  # a request is being answered: the next one's headers are timed after it
            return
        self.transport.write(TIMED_OUT)
        self.transport.close()


class Pipeline(list[Any]):
    """What uvicorn uses of the deque that queues a connection's pipelined requests
    (``appendleft``, ``pop``, truth), as a list: an empty deque is about 700 B, held by every
    open connection; pipelined requests are rare and few."""

    __slots__ = ()

    def appendleft(self, item: Any) -> None:
        self.insert(0, item)


class Signal:
    """What uvicorn uses of ``asyncio.Event`` (``set``, ``clear``, ``is_set``, ``wait``),
    without its deque: a flag, and a list of waiting futures only while someone waits."""

    __slots__ = ("_set", "_waiters")

    def __init__(self, value: bool = False) -> None:
        self._set = value
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        for waiter in self._waiters or ():
            if not waiter.done():
                waiter.set_result(True)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> bool:
        if self._set:
            return True
        waiter = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            self._waiters.remove(waiter)
