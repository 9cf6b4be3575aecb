"""``Slot``: admission units held by a streamed answer until its response ends; and the
streamed response itself (``streaming_response``), lean for the thousands that stay open."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.server.admission import Ticket

WATCHED = "baton.disconnect_watched"  # scope key: ``RequestGuard`` cancels the route's work when the client leaves
DEFERRED = "baton.deferred_response"  # scope key: a streamed response ``RequestGuard`` sends once the route has returned


class Slot:
    """Units taken for a streamed answer: released when the response ends, however it ends
    (finished, failed, or cancelled because the client left). ``Slot(None)``: the guard
    holds the request's ticket and releases it."""

    __slots__ = ("_ticket", "__weakref__")

    def __init__(self, ticket: Ticket | None) -> None:
        self._ticket = ticket

    def release(self) -> None:
        if self._ticket is not None:
            self._ticket.release()

    def streaming(self, content: Any, **kwargs: Any) -> Any:
        """A streamed response of ``content`` (``streaming_response``) that releases this slot
        when it ends, however it ends (nothing to release when the guard holds the request's
        ticket: it releases it)."""
        response = streaming_response(content, **kwargs)
        if self._ticket is not None:
            response.slot = self
        return response

    def __del__(self) -> None:  # a response never sent (the route failed after taking the slot)
        try:
            self.release()
        except Exception:
            pass


_STREAMING: Any = None


def streaming_response(content: Any, **kwargs: Any) -> Any:
    """A ``StreamingResponse`` of ``content`` that, behind ``RequestGuard`` (the scope says
    ``WATCHED``), is not sent by the app at all: called, it leaves itself in the scope
    (``DEFERRED``, with the context it was called in) and returns, and the guard sends it once
    the app has returned (``Deferred.send``). An open stream then holds only its own frames:
    not the framework's between the guard and the route (exception middlewares, the router,
    FastAPI's request handler and its three exit stacks: about 5 KiB a stream), nor
    Starlette's task group listening for the client leaving (the guard's watch does that).
    Anywhere else, Starlette's own way. Its ``slot`` (if set) is released when it ends,
    however it ends. One class, made once (a class per stream cost a kilobyte each)."""
    global _STREAMING
    if _STREAMING is None:
        from starlette.responses import StreamingResponse

        class LeanStreamingResponse(StreamingResponse):
            slot: Slot | None = None

            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                if scope.get(WATCHED) and scope["type"] == "http" and DEFERRED not in scope:
                    scope[DEFERRED] = Deferred(self, contextvars.copy_context())
                    return
                try:
                    await super().__call__(scope, receive, send)
                finally:
                    self.release()

            def release(self) -> None:
                if self.slot is not None:
                    self.slot.release()

        _STREAMING = LeanStreamingResponse
    return _STREAMING(content, **kwargs)


class Deferred:
    """A streamed response left for ``RequestGuard`` to send, and the context the app called
    it in (what it set there, its frames read: the guard sends it in a task of that context)."""

    __slots__ = ("response", "context")

    def __init__(self, response: Any, context: contextvars.Context) -> None:
        self.response = response
        self.context = context

    async def send(self, send: Any) -> None:
        """Its frames, then its background task; released however it ends."""
        from starlette.requests import ClientDisconnect

        response = self.response
        try:
            try:
                await response.stream_response(send)
            except OSError:
                raise ClientDisconnect() from None
            if response.background is not None:
                await response.background()
        finally:
            response.release()

    def drop(self) -> None:
        """Never sent (the client left first): its units released, its frames never produced."""
        self.response.release()
