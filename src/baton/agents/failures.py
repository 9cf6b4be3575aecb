"""Why a question was not (fully) answered, as a typed code every surface can act on.

A failed question is a failed answer: ``error`` (a short, sanitised reason), ``error_code``
(one of ``CODES``) and ``response_type: error``; a question that got some answers but not
all is ``partial: true`` with each failure in ``metadata["agent_errors"]`` (agent,
``error_type``, ``error_code``, reason). Surfaces map codes to their own semantics (the
HTTP routes: ``HTTP_STATUS``).

Two families, decided here so every surface agrees:

- *dependency* failures — the model provider, the database, Baton's own state, the
  question's deadline, the server's capacity: nothing is wrong with the question; trying
  again later may work. HTTP 502/503/504.
- *answer* failures — the question could not be answered from the data: unsafe SQL
  refused, no working query, no model configured, a specialist's own refusal. The answer
  says so; HTTP 200 (the request itself worked).
"""

from __future__ import annotations

from typing import Any

from baton.errors import (
    AllProvidersFailedError,
    ContextLengthExceededError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderServerError,
    ProviderTimeoutError,
    ToolArgumentsError,
    UnknownToolError,
)

# code -> (HTTP status when nothing was answered, what the person asking reads)
CODES: dict[str, tuple[int, str]] = {
    "model_rate_limited": (503, "The model provider is rate-limiting requests; try again shortly."),
    "model_unavailable": (502, "The model provider failed or could not be reached."),
    "model_timeout": (504, "The model provider did not answer in time."),
    "model_auth_failed": (502, "The model provider refused Baton's credentials."),
    "model_rejected_request": (502, "The model provider refused the request."),
    "model_bad_response": (502, "The model answered with something Baton could not use."),
    "context_too_long": (502, "The conversation is too long for the model."),
    "deadline_exceeded": (504, "The question ran out of time before it could be answered."),
    "database_unavailable": (503, "The database could not be reached."),
    "database_timeout": (504, "The database did not answer in time."),
    "state_unavailable": (503, "Baton's conversation store is unavailable."),
    "memory_unavailable": (503, "The workspace's memory is unavailable."),
    "knowledge_unavailable": (503, "The document index is unavailable."),
    "overloaded": (503, "The server is answering as many questions as it can; try again shortly."),
    "agent_failed": (502, "A specialist failed while answering."),
}
DEPENDENCY_CODES = frozenset(CODES)
# A specialist's own failure classes that are dependency failures (the rest are answer failures).
_SPECIALIST_CODES = {
    "connection_error": "database_unavailable",
    "database_unavailable": "database_unavailable",
    "timeout": "database_timeout",
}
_TYPE_NAMES = {
    "ProviderRateLimitError": "model_rate_limited",
    "ProviderServerError": "model_unavailable",
    "ProviderConnectionError": "model_unavailable",
    "ProviderTimeoutError": "model_timeout",
    "QuestionDeadlineExceeded": "deadline_exceeded",
    "ProviderAuthError": "model_auth_failed",
    "ProviderBadRequestError": "model_rejected_request",
    "ContextLengthExceededError": "context_too_long",
    "ToolArgumentsError": "model_bad_response",
    "UnknownToolError": "model_bad_response",
}


def code_of(exc: BaseException) -> str:
    """The code for an exception raised while answering."""
    from baton.llm.policy import QuestionDeadlineExceeded

    if isinstance(exc, AllProvidersFailedError) and exc.errors:
        return _most_telling([code_of(e) for e in exc.errors])
    if isinstance(exc, QuestionDeadlineExceeded) or (isinstance(exc, TimeoutError) and not isinstance(exc, ProviderError)):
        return "deadline_exceeded"
    if isinstance(exc, ProviderError) and exc.code:
        return exc.code
    for cls, code in ((ProviderRateLimitError, "model_rate_limited"), (ProviderTimeoutError, "model_timeout"),
                      (ProviderConnectionError, "model_unavailable"), (ProviderAuthError, "model_auth_failed"),
                      (ContextLengthExceededError, "context_too_long"), (ProviderBadRequestError, "model_rejected_request"),
                      (ProviderServerError, "model_unavailable"), (ProviderError, "model_unavailable"),
                      (ToolArgumentsError, "model_bad_response"), (UnknownToolError, "model_bad_response")):
        if isinstance(exc, cls):
            return code
    specialist = getattr(exc, "error_class", None)  # a specialist's failure class (SQLExecutionError: connection_error)
    if isinstance(specialist, str) and specialist in _SPECIALIST_CODES:
        return _SPECIALIST_CODES[specialist]
    dependency = getattr(exc, "dependency", None)  # a store's bulkhead refused (baton.state.bulkheads)
    if isinstance(dependency, str):
        kind = dependency.split("[")[0]
        return {"sessions": "state_unavailable", "knowledge": "knowledge_unavailable"}.get(kind, "memory_unavailable")
    cause = exc.__cause__
    if cause is not None and cause is not exc:  # a specialist's own error type over a provider's failure
        found = code_of(cause)
        if found != "agent_failed":
            return found
    return "agent_failed"


def _most_telling(codes: list[str]) -> str:
    """Of several failures (a fallback chain), the one a person can act on: a rate limit or
    a timeout says "later"; otherwise the last model's."""
    for preferred in ("deadline_exceeded", "model_rate_limited", "model_timeout"):
        if preferred in codes:
            return preferred
    return codes[-1] if codes else "model_unavailable"


def code_of_result(error_type: str | None, metadata: dict[str, Any] | None = None) -> str:
    """The code of a specialist's failed ``AgentResult``: the code ``AgentTool`` recorded,
    a specialist failure class (``connection_error`` -> ``database_unavailable``; others,
    such as ``unsafe_sql``, are their own code), or an exception's class name."""
    recorded = (metadata or {}).get("error_code")
    if recorded:
        return str(recorded)
    if not error_type:
        return "agent_failed"
    if error_type in _SPECIALIST_CODES:
        return _SPECIALIST_CODES[error_type]
    if error_type in _TYPE_NAMES:
        return _TYPE_NAMES[error_type]
    if error_type[:1].isupper():  # an exception's class name: a bug or an unexpected failure
        return "agent_failed"
    return error_type


def is_dependency_failure(code: str | None) -> bool:
    return code in DEPENDENCY_CODES


def http_status(code: str | None) -> int:
    """The HTTP status of an answer whose question failed with ``code`` (200 for answer
    failures: the request worked, the answer says why there is no data)."""
    return CODES.get(code or "", (200, ""))[0]


def explanation(code: str) -> str:
    """One sentence for the person asking."""
    return CODES.get(code, (200, "The question could not be answered."))[1]


def retry_after_of(exc: BaseException) -> float | None:
    """Seconds a provider asked us to wait (a 429's or 503's Retry-After), when it said."""
    if isinstance(exc, AllProvidersFailedError):
        waits = [w for w in (retry_after_of(e) for e in exc.errors) if w is not None]
        return min(waits) if waits else None
    value = getattr(exc, "retry_after", None)
    return float(value) if isinstance(value, (int, float)) else None
