"""``RequestGuard``: the ASGI layer every HTTP request passes first. It bounds what a request
may send and how long it may take to send it, refuses JSON that Baton would choke on later,
and cancels the work of a client that has gone.

Per request (HTTP only; the lifespan passes through):

- **Body size**: at most ``limits.max_body_bytes`` (``BATON_MAX_BODY_BYTES``, default 1 MiB),
  ``limits.max_chart_body_bytes`` for ``/v1/charts/render`` (chart specs: 6 MB) and
  ``limits.max_chat_body_bytes`` for ``/v1/chat/completions`` (a chat client sends its whole
  history: 4 MiB). A declared ``Content-Length`` over the limit is refused before a byte is
  read; a body that grows past it is refused as soon as it does. 413.
- **Body time**: the whole body must arrive within ``limits.body_timeout_s`` (default 30 s):
  a half-sent request is answered 408 and closed, never kept.
- **JSON**: a JSON body must be plain JSON: no ``NaN``/``Infinity`` constants, no nesting
  deeper than ``limits.max_json_depth`` (64), no unpaired surrogates, no control characters
  other than tab, newline and carriage return (C0 and DEL) in any string or key. 422 (400 in OpenAI's
  shape on the OpenAI-compatible routes). The checks run only when the raw bytes could hold
  such a thing (an escape, a constant's name, many brackets), so an ordinary body is not
  parsed twice.
- **Disconnect**: when the client disconnects before the response is complete, the route's
  work is cancelled (a question stops calling its model; SSE and JSON routes alike).
- **Admission** (``admission.py``): a question (``COSTS``: asks, chat completions, streams,
  pipeline starts and their event streams) takes its admission ticket here, for its
  caller's key (the key or login cookie presented, unchecked yet: ``caller``), once its
  body is read but before it is parsed, authenticated or routed, and holds it until its
  response ends; refused, it gets its 503 with ``Retry-After`` here: refusing must be
  cheap when a saturated process refuses many.

No rejection echoes the input: each says what was wrong, and at most which field.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from baton.dependency_waits import stop_tracking, track
from baton.public_errors import error_body
from baton.server.admission import CALLER, HELD, PIPELINE, QUESTION, STREAM, Admission, Overloaded
from baton.server.errors import OPENAI_PATHS, openai_error_body, overloaded_body
from baton.server.limits import Limits
from baton.server.slots import DEFERRED, WATCHED, Deferred

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_BAD_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
COSTS = {("POST", "/v1/ask"): QUESTION, ("POST", "/v1/ask/stream"): STREAM, ("POST", "/v1/chat/completions"): QUESTION,
         ("POST", "/v1/pipelines"): PIPELINE}  # a streamed chat completion is raised to STREAM by its route (``hold``)
_CREDENTIALS = (b"authorization", b"x-api-key", b"cookie")


def cost_of(method: str, path: str) -> int:
    """Admission units of a request (0: not admitted by ``admission.py``)."""
    cost = COSTS.get((method, path), 0)
    if not cost and method == "GET" and path.startswith("/v1/pipelines/") and path.endswith("/events"):
        return STREAM  # an open stream of a run's events
    return cost


def caller(scope: Scope) -> str:
    """Whom a request counts for, for fairness: its key, or login cookie, as presented (not
    checked yet: a wrong one is refused by the route at once), else its address."""
    for name, value in scope.get("headers", ()):
        if name in _CREDENTIALS:
            return f"{hash(value):x}"
    client = scope.get("client")
    return str(client[0]) if client else ""


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Gone(Exception):
    """The client disconnected before its request was complete."""


def _refuse_constant(name: str) -> Any:
    raise _Refused(422, f"JSON constant {name} is not allowed (use null or a number)")


def check_json(body: bytes, max_depth: int) -> None:
    """Raise ``_Refused`` when ``body`` (JSON) holds what the module docstring forbids."""
    suspicious = b"\\u" in body or b"NaN" in body or b"Infinity" in body or \
        body.count(b"[") + body.count(b"{") > max_depth
    if not suspicious:
        return
    try:
        value = json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:
        raise _Refused(422, f"JSON nested deeper than {max_depth} levels") from None
    except _Refused:
        raise
    except ValueError:
        return  # not JSON at all: the route's own parser says so (422)
    _walk(value, max_depth)


def _walk(value: Any, max_depth: int) -> None:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _BAD_TEXT.search(item):
                raise _Refused(422, "text holds a control character or an unpaired surrogate")
        elif isinstance(item, (dict, list)):
            if depth > max_depth:
                raise _Refused(422, f"JSON nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key, inner in item.items():
                    if _BAD_TEXT.search(key):
                        raise _Refused(422, "a key holds a control character or an unpaired surrogate")
                    stack.append((inner, depth + 1))
            else:
                stack.extend((inner, depth + 1) for inner in item)


class RequestGuard:
    """ASGI middleware (module docstring)."""

    def __init__(self, app: Any, limits: Limits | None = None, admission: Admission | None = None) -> None:
        self.app = app
        self.limits = limits or Limits.from_env()
        self.admission = admission

    def _limit_for(self, path: str) -> int:
        limits = self.limits
        if path == "/v1/charts/render":
            return limits.max_chart_body_bytes
        if path == "/v1/chat/completions":
            return limits.max_chat_body_bytes
        return limits.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        try:
            async with asyncio.timeout(self.limits.body_timeout_s):  # in this task: no task per request to read a body
                body = await self._read_body(scope, receive, self._limit_for(path))
            if body and _is_json(scope):
                check_json(body, self.limits.max_json_depth)
        except TimeoutError:
            await _reply(send, path, 408, f"the request body did not arrive within {self.limits.body_timeout_s:g} s")
            return
        except _Refused as refused:
            await _reply(send, path, refused.status, refused.message)
            return
        except _Gone:
            return
        admission = self.admission
        cost = cost_of(scope.get("method", ""), path) if admission is not None else 0
        if not cost or admission is None:
            await self._run(scope, receive, send, body)
            return
        key = caller(scope)
        try:
            ticket = await admission.admit(key, cost)
        except Overloaded as refused:
            await _overloaded(send, path, refused.retry_after)
            return
        held, called = HELD.set(ticket), CALLER.set(key)  # the route's slot() / hold() find it (the task copies the context)
        waits, tracking = track()
        admitted = time.monotonic()
        streamed = True
        try:
            streamed = await self._run(scope, receive, send, body)
        finally:
            if cost == QUESTION and not streamed:  # a stream's life is its reader's pace, not this process's delay
                admission.answered(time.monotonic() - admitted, waits.seconds)
            ticket.release()
            stop_tracking(tracking)
            HELD.reset(held)
            CALLER.reset(called)

    @staticmethod
    async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    raise _Refused(400, "Content-Length is not a number") from None
                if declared > limit:
                    raise _Refused(413, f"the request body is over the limit of {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Gone  # gone before it finished sending: nothing to answer
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    raise _Refused(413, f"the request body is over the limit of {limit} bytes")
                chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _run(self, scope: Scope, receive: Receive, send: Send, body: bytes) -> bool:
        """Run the app for this request; True when its response was a stream (sent in parts)."""
        loop = asyncio.get_running_loop()
        gone = loop.create_future()  # the client left (a future, not an Event: one per open stream)
        complete = False
        delivered = False
        streamed = False

        async def app_receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.shield(gone)
            return {"type": "http.disconnect"}

        async def app_send(message: Message) -> None:
            nonlocal complete, streamed
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    complete = True
                elif not streamed:
                    streamed = True
            await send(message)

        scope[WATCHED] = True  # a streamed response is left to this guard to send (``slots.py``)
        work: Any = self.app(scope, app_receive, app_send)
        context = None
        while True:
            task = loop.create_task(work, context=context)
            try:
                await self._watch(receive, task, gone)
                if not task.done() and not complete:  # the client left mid-answer: stop the work
                    task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    current = asyncio.current_task()
                    if current is not None and current.cancelling():
                        raise  # this request itself was cancelled, not only its work
                except Exception:
                    if not complete:
                        raise
                    # the error handler answered (and logged it) already
            except BaseException:
                _drop(scope)  # a response left to send, never sent: its units released
                raise
            finally:
                if not task.done():
                    task.cancel()
            deferred: Deferred | None = scope.pop(DEFERRED, None)
            if deferred is None:
                return streamed
            if gone.done():
                deferred.drop()
                return True  # a stream, never started: its reader left
            # The app returned a streamed response without sending it: sent here, in a task of
            # the context the app called it in, its own frames all it holds (``slots.py``). The
            # exit stacks the framework left in the scope were closed when the app returned
            # (FastAPI leaves three, each with a deque: about 2.4 KiB an open stream).
            for name in [name for name, value in scope.items() if isinstance(value, contextlib.AsyncExitStack)]:
                del scope[name]
            work, context = deferred.send(app_send), deferred.context

    @staticmethod
    async def _watch(receive: Receive, task: asyncio.Future[Any], gone: asyncio.Future[None]) -> None:
        """Until the client leaves (``gone`` resolved) or the app's ``task`` ends, in this
        task: no watcher task of its own (thousands of streams stay open). The server's
        ``receive`` waits until the client leaves or the response completes; a task that ends
        without completing it interrupts that wait, which is the only place it can land."""
        current = asyncio.current_task()
        interrupted = reading = False

        def ended(_: Any) -> None:
            nonlocal interrupted
            if reading and current is not None:
                interrupted = True
                current.cancel()

        task.add_done_callback(ended)
        try:
            while not task.done():
                reading = True
                try:
                    message = await receive()
                except asyncio.CancelledError:
                    if interrupted and current is not None and current.uncancel() == 0:
                        return  # the app's task ended: nothing else asked to cancel this one
                    raise
                finally:
                    reading = False
                if message["type"] == "http.disconnect":
                    if not gone.done():
                        gone.set_result(None)
                    return
        finally:
            task.remove_done_callback(ended)


def _drop(scope: Scope) -> None:
    deferred: Deferred | None = scope.pop(DEFERRED, None)
    if deferred is not None:
        deferred.drop()


async def _overloaded(send: Send, path: str, retry_after: int) -> None:
    """The 503 the ``Overloaded`` handler (``errors.py``) would send, sent before any parsing:
    a saturated process refuses for next to nothing. The connection stays open (the body
    was read)."""
    await _send_json(send, 503, overloaded_body(path.startswith(OPENAI_PATHS)), (b"retry-after", str(retry_after).encode()))


async def _send_json(send: Send, status: int, payload: dict[str, Any], header: tuple[bytes, bytes]) -> None:
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), header]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data, "more_body": False})


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return b"json" in value.lower()
    return False


async def _reply(send: Send, path: str, status: int, message: str) -> None:
    if path.startswith(OPENAI_PATHS):
        payload = openai_error_body(message, code="request_refused")
        status = 400 if status == 422 else status
    else:
        payload = error_body(message)
    await _send_json(send, status, payload, (b"connection", b"close"))
