"""``Slot``: admission units held by a streamed answer until its response ends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.server.admission import Ticket


class Slot:
    """Units taken for a streamed answer: released when the response ends, however it ends
    (finished, failed, or cancelled because the client left). ``Slot(None)``: the guard
    holds the request's ticket and releases it."""

    def __init__(self, ticket: Ticket | None) -> None:
        self._ticket = ticket

    def release(self) -> None:
        if self._ticket is not None:
            self._ticket.release()

    def streaming(self, content: Any, **kwargs: Any) -> Any:
        """A ``StreamingResponse`` of ``content`` that releases this slot when it ends, however
        it ends (a plain one when the guard holds the request's ticket: it releases it)."""
        from starlette.responses import StreamingResponse

        if self._ticket is None:
            return StreamingResponse(content, **kwargs)
        response = _releasing_response()(content, **kwargs)
        response.slot = self
        return response

    def __del__(self) -> None:  # a response never sent (the route failed after taking the slot)
        try:
            self.release()
        except Exception:
            pass


_RELEASING: Any = None


def _releasing_response() -> Any:
    """The ``StreamingResponse`` that releases its ``slot`` at its end: one class, made once
    (a class per stream cost a kilobyte each)."""
    global _RELEASING
    if _RELEASING is None:
        from starlette.responses import StreamingResponse

        class ReleasingStreamingResponse(StreamingResponse):
            slot: Slot

            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                try:
                    await super().__call__(scope, receive, send)
                finally:
                    self.slot.release()

        _RELEASING = ReleasingStreamingResponse
    return _RELEASING
