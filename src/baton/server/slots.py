"""``Slot``: admission units held by a streamed answer until its response ends; and the
streamed response itself (``streaming_response``), lean for the thousands that stay open."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.server.admission import Ticket

WATCHED = "baton.disconnect_watched"  # scope key: ``RequestGuard`` cancels the route's work when the client leaves


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
    ``WATCHED``), sends its frames in the request's own task: Starlette's listens for the
    client leaving in a task group of its own (a task, a cancel scope, an event and their
    coroutines, for the stream's whole life), which the guard's watch already does. Anywhere else, Starlette's own
    way. Its ``slot`` (if set) is released when it ends, however it ends. One class, made
    once (a class per stream cost a kilobyte each)."""
    global _STREAMING
    if _STREAMING is None:
        from starlette.requests import ClientDisconnect
        from starlette.responses import StreamingResponse

        class LeanStreamingResponse(StreamingResponse):
            slot: Slot | None = None

            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                try:
                    if scope.get(WATCHED) and scope["type"] == "http":
                        try:
                            await self.stream_response(send)
                        except OSError:
                            raise ClientDisconnect() from None
                        if self.background is not None:
                            await self.background()
                    else:
                        await super().__call__(scope, receive, send)
                finally:
                    if self.slot is not None:
                        self.slot.release()

        _STREAMING = LeanStreamingResponse
    return _STREAMING(content, **kwargs)
