"""A streamed response behind ``RequestGuard`` is sent by the guard once the app has returned
(``slots.DEFERRED``): its frames reach the client and its slot is released after them, and the
exit stacks the framework left in the scope are not held meanwhile; one the
client left before it was sent is never produced, and its slot is released all the same."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from baton.server.guard import RequestGuard
from baton.server.limits import Limits
from baton.server.slots import Slot


class Ticket:
    """What ``Slot`` needs of admission's ticket: released once, however often asked."""

    def __init__(self) -> None:
        self.released = False

    def release(self) -> None:
        self.released = True


def guarded(ticket: Ticket, produced: list[str]) -> RequestGuard:
    async def frames():
        for frame in ("one\n", "two\n"):
            produced.append(frame)
            yield frame

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        async with contextlib.AsyncExitStack() as stack:  # as FastAPI's request handler leaves them in the scope
            scope["framework_stack"] = stack
        await Slot(ticket).streaming(frames(), media_type="text/event-stream")(scope, receive, send)

    return RequestGuard(app, limits=Limits())


SCOPE = {"type": "http", "method": "GET", "path": "/events", "headers": []}


def receiver(until_gone: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[dict[str, Any]]]:
    """A server's ``receive``: the (empty) request, then a disconnect once ``until_gone()`` returns."""
    calls = 0

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"type": "http.request", "body": b"", "more_body": False}
        await until_gone()
        return {"type": "http.disconnect"}

    return receive


async def test_the_guard_sends_a_deferred_stream_and_releases_its_slot_after_it():
    ticket, produced, sent = Ticket(), [], []
    done = asyncio.Event()
    receive = receiver(done.wait)  # the server's receive: returns once the response is complete

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            done.set()

    scope = dict(SCOPE)
    await guarded(ticket, produced)(scope, receive, send)
    assert "framework_stack" not in scope  # closed when the app returned: not held while the stream is open
    bodies = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert bodies == b"one\ntwo\n" and produced == ["one\n", "two\n"] and ticket.released


async def test_a_stream_whose_client_left_before_it_was_sent_is_never_produced_and_its_slot_is_released():
    ticket, produced, sent = Ticket(), [], []
    receive = receiver(lambda: asyncio.sleep(0))  # the app returns its response in this turn; the client has gone by the next

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await guarded(ticket, produced)(dict(SCOPE), receive, send)
    assert sent == [] and produced == [] and ticket.released
