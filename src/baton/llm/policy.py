"""One policy for every model call: retries, fallback, a per-call timeout and a per-question
deadline.

A question is answered inside a *question scope* (``question_scope``), opened by
``OrchestratorAgent.ask`` and by the Workspace's answer path. While a scope is active, every
model an agent obtains (``BaseAgent.model_for``, the orchestrator's routing model, the
planner's, the SQL specialist's repair turns) goes through ``with_policy`` (``baton.llm.scoped``): an ``LLMRouter``
applying the scope's ``RetryPolicy`` to it. So the routing call, each specialist's calls, the
planner and the repair rounds are tried the same way:

- up to ``attempts`` tries per model (default 3), exponential backoff with jitter between
  them, a server's ``Retry-After`` honoured exactly (capped by ``max_retry_after`` and by
  what is left of the question's deadline: a wait that would outlive the deadline is not
  taken, the error is reported at once);
- then the next model of a fallback chain (``BATON_MODEL=a,b``);
- each call bounded by ``call_timeout`` (default ``DEFAULT_CALL_TIMEOUT_S`` = 30 s,
  ``BATON_LLM_TIMEOUT``), and never past the question's deadline (default
  ``DEFAULT_QUESTION_DEADLINE_S`` = 120 s, ``BATON_QUESTION_DEADLINE``): a call cut by the
  deadline raises ``QuestionDeadlineExceeded``, which is never retried.

Outside a scope (a specialist run directly in a unit test, a library user calling a
provider) models are used as given: the policy belongs to answering a question.

The tool-calling loop's own "refunds" (retrying a retryable provider error) would be a
second policy on top of this one; the orchestrator turns them off for policy models.

Defaults come from a ``baton.settings.Settings`` once, on first use (never at import):
``configure_defaults(settings)`` at start-up, else ``Settings.from_env()``. Never per question.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from baton.errors import ConfigurationError, ProviderError, ProviderTimeoutError
from baton.settings import Settings

DEFAULT_CALL_TIMEOUT_S = 30.0
DEFAULT_QUESTION_DEADLINE_S = 120.0
DEFAULT_ATTEMPTS = 3
COMPOSE_MARGIN_S = 0.2  # a model call stops this long before the deadline, so the answer can still be composed


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try one entry before falling back.

    ``attempts`` counts tries per entry (1 = no retry). Backoff before try n+1 is
    ``min(max_delay, base_delay * 2**(n-1))`` scaled by a random factor in
    ``[1 - jitter, 1]`` so that many clients hit by the same outage do not return in
    lockstep. A server's Retry-After replaces the backoff, capped by ``max_retry_after``.
    """

    attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.5
    max_retry_after: float = 60.0
    call_timeout: float | None = None  # seconds per try (None: the question's policy, else the SDK's own)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigurationError("RetryPolicy.attempts must be at least 1")
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError("RetryPolicy.jitter must be between 0 and 1")
        if self.call_timeout is not None and not self.call_timeout > 0:
            raise ConfigurationError("RetryPolicy.call_timeout must be positive")

    def delay(self, attempt: int, error: ProviderError, rng: random.Random) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        retry_after: float | None = getattr(error, "retry_after", None)  # a 429's, or a 503's (errors_map)
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return backoff * (1 - self.jitter * rng.random())


class QuestionDeadlineExceeded(ProviderTimeoutError):
    """The question's deadline passed while a model call was waiting (or before it could
    start). Never retried: no later try could end in time."""

    retryable = False


@dataclass(frozen=True)
class QuestionScope:
    """The policy and deadline of the question being answered (``time.monotonic`` seconds)."""

    policy: RetryPolicy
    deadline: float
    deadline_s: float

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


_SCOPE: contextvars.ContextVar[QuestionScope | None] = contextvars.ContextVar("baton_question_scope", default=None)
_defaults: tuple[RetryPolicy, float] | None = None


def policy_from_settings(settings: Settings) -> tuple[RetryPolicy, float]:
    """(the retry policy of every model call, the question deadline in seconds) from
    ``BATON_LLM_TIMEOUT``, ``BATON_LLM_ATTEMPTS`` and ``BATON_QUESTION_DEADLINE``."""
    timeout = settings.llm_timeout_s if settings.llm_timeout_s is not None else DEFAULT_CALL_TIMEOUT_S
    return RetryPolicy(attempts=settings.llm_attempts, call_timeout=timeout), settings.question_deadline_s


def policy_from_env(env: Mapping[str, str] | None = None) -> tuple[RetryPolicy, float]:
    """``policy_from_settings(Settings.from_env(env))``."""
    return policy_from_settings(Settings.from_env(env))


def configure_defaults(settings: Settings) -> None:
    """Make ``settings``' policy and deadline the process's (the CLI and the server, at start-up)."""
    global _defaults
    _defaults = policy_from_settings(settings)


def default_policy() -> tuple[RetryPolicy, float]:
    """The process's policy: ``configure_defaults``', else ``policy_from_env()``, read once."""
    global _defaults
    if _defaults is None:
        _defaults = policy_from_env()
    return _defaults


def current_scope() -> QuestionScope | None:
    return _SCOPE.get()


@contextlib.contextmanager
def question_scope(policy: RetryPolicy | None = None, deadline_s: float | None = None) -> Iterator[QuestionScope]:
    """Answer one question under ``policy`` (default: the process's) and within
    ``deadline_s`` seconds (default: the process's). Inside an enclosing scope (a pipeline
    stage asking the orchestrator again) the earlier deadline wins."""
    outer = _SCOPE.get()
    if policy is None or deadline_s is None:
        default, default_deadline = (outer.policy, outer.deadline_s) if outer is not None else default_policy()
        policy = policy or default
        deadline_s = deadline_s if deadline_s is not None else default_deadline
    deadline = time.monotonic() + deadline_s
    if outer is not None and outer.deadline < deadline:
        deadline = outer.deadline
    token = _SCOPE.set(QuestionScope(policy, deadline, deadline_s))
    try:
        yield _SCOPE.get()  # type: ignore[misc]
    finally:
        _SCOPE.reset(token)


def call_budget(call_timeout: float | None) -> tuple[float | None, bool]:
    """(seconds the next model call may take, whether the deadline is what limits it).
    ``QuestionDeadlineExceeded`` when the question has no time left for a call."""
    scope = _SCOPE.get()
    if scope is None:
        return call_timeout, False
    left = scope.remaining() - COMPOSE_MARGIN_S
    if left <= 0:
        raise QuestionDeadlineExceeded(f"the question's deadline of {scope.deadline_s:g} s has passed")
    if call_timeout is None or left < call_timeout:
        return left, True
    return call_timeout, False


def time_left() -> float | None:
    """Seconds left before the question's deadline (None outside a question)."""
    scope = _SCOPE.get()
    return None if scope is None else scope.remaining()
