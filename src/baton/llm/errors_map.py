"""Translate the ``openai`` and ``anthropic`` SDK exceptions into ``baton.errors`` types.

Both SDKs raise the same shapes (a status error with ``status_code``, ``response`` and a
decoded ``body``; a connection error; a timeout error that subclasses the connection
error), so one mapper serves both, reading attributes rather than importing either SDK.

Decisions:
- 429 -> ``ProviderRateLimitError`` with ``retry_after`` from ``retry-after-ms`` or
  ``Retry-After`` (seconds or an HTTP date); 408 and timeouts -> ``ProviderTimeoutError``;
  5xx, 529 and the SDKs' own 599-style codes -> ``ProviderServerError``; 401/403 ->
  ``ProviderAuthError``; a 400/413 that says the prompt is over the window ->
  ``ContextLengthExceededError`` (413 "request too large" shrinks the same way), any other
  4xx -> ``ProviderBadRequestError``.
- The context-overflow test checks machine-readable codes first (OpenAI
  ``context_length_exceeded``, llama.cpp ``exceed_context_size_error``, Anthropic
  ``error.details.error_code``) and falls back to the wording the servers use, because
  vLLM, Ollama, OpenRouter and Anthropic send only a message.
- An error event inside a stream (HTTP 200 already sent) is classified by its error
  ``type``: rate limit, overloaded or server error are retryable.
- 409 (the SDKs' own retry rule treats a conflict as transient) and 425 "too early" are
  retryable ``ProviderServerError``s; a ``Retry-After`` on them, on a 503 or on any 5xx, is
  kept as ``retry_after`` like a 429's, so the router waits what the server asked.
- Data that does not parse (a corrupted stream frame, a proxy's HTML page instead of JSON)
  is a ``ProviderServerError`` naming it, never a bare ``ValueError``/``AttributeError``:
  callers handle ``ProviderError`` only.
- Messages are sanitised (``sanitize.provider_text``): ``provider/model: HTTP status: short
  message`` built from the body's error message only, never from the SDK's own text (which
  holds the whole body), with keys, credential-shaped text, HTML pages and long quoted
  passages removed. ``secrets`` (the configured key) are redacted wherever they appear.
"""

from __future__ import annotations

import email.utils
import functools
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from baton.errors import (
    ContextLengthExceededError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderServerError,
    ProviderTimeoutError,
)
from baton.llm.sanitize import provider_text

_CONTEXT_CODES = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "context_window_exceeded", "prompt_too_long", "request_too_large"}
)
_CONTEXT_WORDING = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|prompt is too long|too many (input )?tokens"
    r"|exceeds? the (available )?context|input is too long|reduce the length of the messages",
    re.IGNORECASE,
)
_RETRYABLE_STREAM_TYPES: dict[str, type[ProviderError]] = {
    "rate_limit_error": ProviderRateLimitError,
    "rate_limit_exceeded": ProviderRateLimitError,
    "overloaded_error": ProviderServerError,
    "api_error": ProviderServerError,
    "server_error": ProviderServerError,
    "timeout_error": ProviderTimeoutError,
}


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (a number or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_fields(body: Any) -> tuple[str, str, str]:
    """(code, type, message) from an error body in either vendor's shape."""
    if not isinstance(body, dict):
        return "", "", str(body or "")
    error = body.get("error")
    inner: dict[Any, Any] = error if isinstance(error, dict) else body
    found = inner.get("details")
    details: dict[Any, Any] = found if isinstance(found, dict) else {}
    code = inner.get("code") or details.get("error_code") or ""
    return str(code), str(inner.get("type") or ""), str(inner.get("message") or "")


def is_context_length_error(code: str, type_: str, message: str) -> bool:
    """True when a 400/413 says the prompt does not fit the model's window."""
    if code in _CONTEXT_CODES or type_ in _CONTEXT_CODES:
        return True
    if code and ("context" in code or "too_long" in code):
        return True
    return bool(_CONTEXT_WORDING.search(message))


class _Origin(TypedDict, total=False):
    """The keyword arguments every ``ProviderError`` built here shares."""

    provider: str
    model: str
    status_code: int


def map_sdk_error(exc: BaseException, *, provider: str, model: str, secrets: Iterable[str | None] = ()) -> ProviderError:
    """The ``ProviderError`` for an exception raised by an SDK call (or its transport)."""
    if isinstance(exc, ProviderError):
        return exc
    kw: _Origin = {"provider": provider, "model": model}
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    body = getattr(exc, "body", None)
    code, type_, message = _error_fields(body)
    secrets = tuple(secrets)
    shown = provider_text(message, secrets=secrets)
    if not shown and isinstance(body, str):
        shown = provider_text(body, secrets=secrets)
    if isinstance(status, int) and status >= 400:
        text = f"{provider}/{model}: HTTP {status}" + (f": {shown}" if shown else "")
    else:
        text = f"{provider}/{model}: " + (shown or provider_text(str(exc), secrets=secrets) or type(exc).__name__)
    name = type(exc).__name__

    if isinstance(status, int) and status >= 400:
        kw["status_code"] = status
        if status == 429:
            return ProviderRateLimitError(text, retry_after=parse_retry_after(headers), **kw)
        if status == 408:
            return ProviderTimeoutError(text, **kw)
        if status >= 500 or status in (409, 425):
            return _with_retry_after(ProviderServerError(text, **kw), headers)
        if status in (401, 403):
            return ProviderAuthError(text, **kw)
        if status in (400, 413) and is_context_length_error(code, type_, message or str(exc)):
            return ContextLengthExceededError(text, **kw)
        return ProviderBadRequestError(text, **kw)

    if isinstance(exc, ValueError):  # json.JSONDecodeError from an SDK's body or SSE parser
        return ProviderServerError(f"{provider}/{model}: the provider sent data that is not valid JSON",
                                   code="model_bad_response", **kw)
    from_aiohttp = type(exc).__module__.startswith("aiohttp")  # one the SDK's mapping let through
    if ("Timeout" in name and not _dropped(exc)) or (from_aiohttp and isinstance(exc, TimeoutError)):
        # APITimeoutError, httpx ReadTimeout/ConnectTimeout/PoolTimeout, aiohttp's timeouts
        return ProviderTimeoutError(f"{provider}/{model}: request timed out", **kw)
    if ("Timeout" in name or from_aiohttp or "Connection" in name
            or name in {"ConnectError", "RemoteProtocolError", "ReadError", "WriteError"}):
        cause = _root_cause(exc) if "Timeout" in name else exc.__cause__ or exc
        detail = provider_text(str(cause), secrets=secrets) or type(cause).__name__
        return ProviderConnectionError(f"{provider}/{model}: cannot reach the provider ({detail})", **kw)

    # An error event inside an already-started stream, or something the SDK raised itself.
    if is_context_length_error(code, type_, message):
        return ContextLengthExceededError(text, **kw)
    cls = _RETRYABLE_STREAM_TYPES.get(type_) or _RETRYABLE_STREAM_TYPES.get(code)
    if cls is ProviderRateLimitError:
        return ProviderRateLimitError(text, retry_after=parse_retry_after(headers), **kw)
    if cls is not None:
        return cls(text, **kw)
    if type_ in ("authentication_error", "permission_error"):
        return ProviderAuthError(text, **kw)
    if type_:
        return ProviderBadRequestError(text, **kw)
    return ProviderServerError(text, **kw)


def _root_cause(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def _dropped(exc: BaseException) -> bool:
    """A "timeout" that was a failed or dropped connection: the SDKs' aiohttp transport
    reports every ``aiohttp.ClientConnectionError`` (a refused connection, a server
    disconnect) as httpx's ``ConnectTimeout``; the first aiohttp error in the chain says
    which it was."""
    cause = exc.__cause__
    while cause is not None:
        if type(cause).__module__.startswith("aiohttp"):
            return not isinstance(cause, TimeoutError)
        cause = cause.__cause__
    return False


def _with_retry_after(error: ProviderError, headers: Mapping[str, str] | None) -> ProviderError:
    """``error`` carrying the server's Retry-After (seconds) as ``retry_after``, or None."""
    error.retry_after = parse_retry_after(headers)  # type: ignore[attr-defined]
    return error


def unexpected_response(body: Any, *, provider: str, model: str) -> ProviderBadRequestError:
    """A 200 whose body is not the API's object (an HTML page from a wrong base URL, a proxy)."""
    excerpt = provider_text(str(body)[:2000])
    return ProviderBadRequestError(
        f"{provider}/{model}: the server did not answer with an API response (check the base URL): {excerpt}",
        provider=provider, model=model, code="model_bad_response",
    )


@functools.cache
def transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP clients' transport errors (a stream cut mid-body surfaces as one of these;
    aiohttp's own when an error escapes the SDK's mapping of them)."""
    found: list[type[BaseException]] = []
    for module_name, error_name in (("httpx2", "TransportError"), ("httpx", "TransportError"), ("aiohttp", "ClientError")):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        error = getattr(module, error_name, None)
        if isinstance(error, type):
            found.append(error)
    return tuple(found)
