"""Server-Sent Events framing, and the in-band error event of a stream that broke after
it started (its status line was already sent)."""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("baton.server")


def sse(event: str, data: Any, *, event_id: int | str | None = None) -> str:
    """One event; ``event_id`` is its ``id:`` line, which a reconnecting client sends back
    as ``Last-Event-ID`` (a pipeline event's sequence number)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, default=str)}\n\n"


def sse_data(data: Any) -> str:
    """An unnamed event (what OpenAI-style streaming clients read)."""
    return f"data: {data if isinstance(data, str) else json.dumps(data, default=str)}\n\n"


def error_payload(exc: BaseException) -> dict[str, Any]:
    """What a client reads about a failure: its type, a typed code, and a short reason for
    Baton's own errors only (anything else may carry text nobody should see: its type)."""
    from baton.errors import BatonError
    from baton.public_errors import public_text, redact
    from baton.server.errors import dependency_code, stream_error
    from baton.state.bulkheads import DependencyUnavailable

    if isinstance(exc, DependencyUnavailable):
        from baton.state.turn_keys import TurnUnconfirmed

        turn = {"turn_id": exc.key, "may_be_stored": exc.may_be_stored} if isinstance(exc, TurnUnconfirmed) else {}
        return stream_error(type(exc).__name__, dependency_code(exc), f"{exc.dependency.split('[')[0]} is unavailable ({redact(exc.reason)})",
                            **turn)
    if isinstance(exc, BatonError):
        from baton.agents.failures import code_of

        code = code_of(exc)
        return stream_error(type(exc).__name__, code, public_text(str(exc), code))
    log.error("stream failed: %s", type(exc).__name__, exc_info=exc)
    return stream_error(type(exc).__name__, "internal_error", f"internal error ({type(exc).__name__})")


def sse_error(exc: BaseException) -> str:
    return sse("error", error_payload(exc))
