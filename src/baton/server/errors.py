"""HTTP semantics of failures, for every route (README: "Limits, timeouts and HTTP errors").

- A refused request (bad body, over a limit) is a 4xx that names the field and the reason
  and never echoes the input back (``validation_error``): a 10 MB body gets a small reply.
  On the OpenAI-compatible routes the shape is OpenAI's ``{"error": {...}}`` with 400.
- A store that cannot serve (``DependencyUnavailable``: conversations, memory) is a 503 with
  ``Retry-After`` and ``error_code`` (``state_unavailable``, ``memory_unavailable``); for a
  turn, also its idempotency key (``turn_id``) and ``may_be_stored`` (``baton.state.turn_keys``).
- A full server (``admission.Overloaded``) is a 503 with ``Retry-After`` and
  ``error_code: overloaded``.
- An answer whose question failed on a dependency (``baton.agents.failures``: the model,
  the database, the deadline) keeps its body (the answer JSON, with ``error`` and
  ``error_code``) and takes that failure's status: 502, 503 (with ``Retry-After`` when the
  provider said) or 504. A partial answer, or one that failed for an answer reason (unsafe
  SQL refused, no working query) is a 200: the answer says what happened.
- Anything unexpected is a 500 JSON body naming only its type (the traceback goes to the
  log, once).
- No failure text reaches a user with a host, port, path, URL or driver message in it
  (``baton.public_errors``); the log keeps the full text.

Every error body of the server is built by four builders, so a shape is spelt once
(``tests/test_http_error_bodies.py`` checks that no other server module builds one):
``error_body`` (Baton's ``{"detail", "error_code"?, ...}``, FastAPI's ``HTTPException``
bodies included; it lives in ``baton.public_errors``, shared with MCP's HTTP endpoint),
``openai_error_body`` (OpenAI's ``{"error": {...}}``; streamed, without
``param``, as Baton has always sent it), ``stream_error`` (the data of a Baton event
stream's ``event: error``) and ``overloaded_body``. A body that never changes is built once,
at import, by its module.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.utils import is_body_allowed_for_status_code
from starlette.exceptions import HTTPException

from baton.agents.failures import http_status
from baton.public_errors import error_body, redact
from baton.response import AIMessage
from baton.server.admission import OVERLOADED, Overloaded
from baton.state.bulkheads import DependencyUnavailable
from baton.state.turn_keys import KEY_HEADER, BadTurnKey, TurnUnconfirmed

log = logging.getLogger("baton.server")
OPENAI_PATHS = ("/v1/chat/completions", "/v1/models")
MAX_ERRORS = 20
MAX_LOC_CHARS = 100


def is_openai(request: Request) -> bool:
    return request.url.path.startswith(OPENAI_PATHS)


def error_response(status: int, detail: Any, code: str | None = None, *, headers: Mapping[str, str] | None = None,
                   **extra: Any) -> JSONResponse:
    return JSONResponse(error_body(detail, code, **extra), status_code=status, headers=headers)


def respond(status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A body built once (a module's constant from one of the builders), sent with ``status``."""
    return JSONResponse(body, status_code=status, headers=headers)


def openai_error_body(message: str, *, type: str = "invalid_request_error", param: str | None = None,
                      code: str | None = None, streamed: bool = False, **extra: Any) -> dict[str, Any]:
    """OpenAI's error shape, ``extra`` beside ``error`` (``baton``, a turn's key). An error
    inside a stream (``streamed``) has no ``param``: the chunks have always left it out."""
    if streamed:
        return {"error": {"message": message, "type": type, "code": code}, **extra}
    return {"error": {"message": message, "type": type, "param": param, "code": code}, **extra}


def openai_error(status: int, message: str, *, type: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None, headers: Mapping[str, str] | None = None, **extra: Any) -> JSONResponse:
    return JSONResponse(openai_error_body(message, type=type, param=param, code=code, **extra),
                        status_code=status, headers=headers)


def stream_error(error: str, code: str, detail: Any, **extra: Any) -> dict[str, Any]:
    """The data of a Baton event stream's ``event: error`` (its status line was sent): the
    failure's type name, its code, a public sentence (``sse.error_payload``)."""
    return {"error": error, "error_code": code, "detail": detail, **extra}


_OVERLOADED = (error_body(OVERLOADED, "overloaded"),
               openai_error_body(OVERLOADED, type="service_unavailable", code="overloaded"))


def overloaded_body(openai: bool) -> dict[str, Any]:
    """A full server's 503 body in the route's shape: the ``Overloaded`` handler's, the
    request guard's (which refuses before any parsing) and the connection limit's, one
    spelling, built once (callers only serialise it)."""
    return _OVERLOADED[openai]


def dependency_code(exc: DependencyUnavailable) -> str:
    return "memory_unavailable" if exc.dependency.startswith(("memory", "insights")) else "state_unavailable"


def retry_headers(seconds: float | None) -> dict[str, str] | None:
    if seconds is None:
        return None
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def answer_status(message: AIMessage) -> int:
    """The HTTP status of an answer (module docstring)."""
    if message.partial or not message.error_code:
        return 200
    return http_status(message.error_code)


def answer_headers(message: AIMessage) -> dict[str, str] | None:
    if answer_status(message) == 503:
        return retry_headers(message.metadata.get("retry_after_s") or 1)
    return None


def _location(loc: Any) -> list[Any]:
    out = []
    for part in loc or ():
        if isinstance(part, str) and len(part) > MAX_LOC_CHARS:
            part = part[:MAX_LOC_CHARS] + "…"
        out.append(part)
    return out


def register_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        detail = [{"loc": _location(e.get("loc")), "msg": str(e.get("msg", ""))[:300], "type": e.get("type")}
                  for e in errors[:MAX_ERRORS]]
        if is_openai(request):
            first = detail[0] if detail else {"loc": [], "msg": "invalid request"}
            where = ".".join(str(p) for p in first["loc"][1:]) or None
            return openai_error(400, f"{where or 'body'}: {first['msg']}", param=where, code="invalid_request")
        return error_response(422, detail)

    @app.exception_handler(HTTPException)
    async def http_exception(request: Request, exc: HTTPException) -> Response:
        """A raised ``HTTPException``: FastAPI's own reply (``{"detail": ...}``, its status
        and headers; no body where the status allows none), its body built here."""
        if not is_body_allowed_for_status_code(exc.status_code):
            return Response(status_code=exc.status_code, headers=exc.headers)
        return error_response(exc.status_code, exc.detail, headers=exc.headers)

    @app.exception_handler(DependencyUnavailable)
    async def unavailable(request: Request, exc: DependencyUnavailable) -> JSONResponse:
        code = dependency_code(exc)
        message = f"{exc.dependency.split('[')[0]} is unavailable ({redact(exc.reason)}); try again shortly"
        headers = retry_headers(5) or {}
        turn: dict[str, Any] = {"turn_id": exc.key, "may_be_stored": exc.may_be_stored} if isinstance(exc, TurnUnconfirmed) else {}
        if is_openai(request):
            if turn.get("may_be_stored"):  # an SDK retrying without the key could store the turn twice
                headers["x-should-retry"] = "false"
            return openai_error(503, message, type="service_unavailable", code=code, headers=headers, **turn)
        return error_response(503, message, code, headers=headers, **turn)

    @app.exception_handler(BadTurnKey)
    async def bad_key(request: Request, exc: BadTurnKey) -> JSONResponse:
        if is_openai(request):
            return openai_error(400, str(exc), param=KEY_HEADER, code="invalid_idempotency_key")
        return error_response(422, str(exc), "invalid_idempotency_key")

    @app.exception_handler(Overloaded)
    async def overloaded(request: Request, exc: Overloaded) -> JSONResponse:
        return respond(503, overloaded_body(is_openai(request)), retry_headers(exc.retry_after))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, type(exc).__name__, exc_info=exc)
        if is_openai(request):
            return openai_error(500, f"internal error ({type(exc).__name__})", type="server_error", code="internal_error")
        return error_response(500, f"internal error ({type(exc).__name__})", "internal_error")
