"""``LLMRouter``: retry with backoff on one model, then fall back along a chain.

The router is itself a ``ChatModel``, so everything that takes a model takes a router.

Rules, per call:
- A retryable ``ProviderError`` (timeout, 429, 5xx, connection) is retried on the same
  entry up to ``RetryPolicy.attempts`` tries in all, sleeping an exponential backoff with
  jitter between tries; a 429 or 5xx that says ``Retry-After`` waits exactly that long,
  capped by ``max_retry_after``.
- When an entry is exhausted, or fails with a non-retryable error (auth, bad request),
  the next entry is tried (a WARNING names both).
- ``ContextLengthExceededError`` propagates at once: the loop answers it by compressing
  the conversation, and a different model would not make the prompt fit any better.
- Anything that is not a ``ProviderError`` (a bug, a cancelled task) propagates untouched.
- When every entry failed: ``AllProvidersFailedError`` carrying each entry's last error
  (``retryable`` if any of them was).
- ``stream`` retries and falls back only before its first chunk was yielded: after that
  the caller has shown text to someone, and switching models would splice two answers.
- ``RetryPolicy.call_timeout`` bounds each try (``complete``: the whole call; ``stream``:
  the wait for each chunk); a try past it is a ``ProviderTimeoutError`` like the SDK's own.
  Inside a question (``baton.llm.policy.question_scope``) a try is also cut at the
  question's deadline (``QuestionDeadlineExceeded``, never retried), and a backoff or a
  Retry-After that would outlive the deadline is not waited for: the error is final.

``provider``/``model`` of the router are those of its first entry; each ``LLMResponse``
names the entry that actually answered. The router keeps no per-request state, so one
instance serves any number of concurrent requests.

Preferences (user -> project -> app, seed 002) build routers in ``baton.llm.preferences``
(``ModelPreferences(...).router()``); a router knows models, not the strings naming them.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from baton.errors import (
    AllProvidersFailedError,
    ConfigurationError,
    ContextLengthExceededError,
    ProviderError,
    ProviderTimeoutError,
)
from baton.llm.base import ChatModel
from baton.llm.policy import COMPOSE_MARGIN_S, QuestionDeadlineExceeded, RetryPolicy, call_budget, current_scope, time_left
from baton.messages import LLMResponse, Message, StreamChunk, Tool

log = logging.getLogger(__name__)
_RNG = random.Random()  # jitter only: one shared generator (seeding one per router costs more than a call)

Sleep = Callable[[float], Awaitable[Any]]


def _label(model: ChatModel) -> str:
    return f"{model.provider}:{model.model}"


class LLMRouter:
    """A ``ChatModel`` over an ordered chain of ``ChatModel`` entries."""

    def __init__(
        self,
        models: Sequence[ChatModel],
        *,
        policy: RetryPolicy | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        unwrap_single: bool = False,
    ) -> None:
        if not models:
            raise ConfigurationError("LLMRouter needs at least one model")
        self.models: tuple[ChatModel, ...] = tuple(models)
        self.policy = policy or RetryPolicy()
        self._sleep = sleep or asyncio.sleep
        self._rng = rng or _RNG
        self.unwrap_single = unwrap_single  # one model, one failure: raise it as is (the policy wrapper of one model)

    @property
    def provider(self) -> str:
        return self.models[0].provider

    @property
    def model(self) -> str:
        return self.models[0].model

    def __repr__(self) -> str:
        return f"LLMRouter({', '.join(_label(m) for m in self.models)})"

    # --- ChatModel -------------------------------------------------------------------

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        failures: list[ProviderError] = []
        for index, entry in enumerate(self.models):
            for attempt in range(1, self.policy.attempts + 1):
                seconds, by_deadline = self._budget()
                try:
                    if seconds is None:
                        return await entry.complete(messages, tools, temperature=temperature, max_tokens=max_tokens)
                    async with asyncio.timeout(seconds):
                        return await entry.complete(messages, tools, temperature=temperature, max_tokens=max_tokens)
                except ContextLengthExceededError:
                    raise
                except TimeoutError:
                    error: ProviderError = self._timed_out(entry, seconds, by_deadline)
                except ProviderError as exc:
                    error = exc
                if isinstance(error, QuestionDeadlineExceeded):
                    raise error
                if not await self._should_retry(entry, attempt, error):
                    failures.append(error)
                    self._log_fallback(index, error)
                    break
        raise self._all_failed(failures)

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamChunk]:
        failures: list[ProviderError] = []
        for index, entry in enumerate(self.models):
            for attempt in range(1, self.policy.attempts + 1):
                started = False
                chunks = entry.stream(messages, tools, temperature=temperature, max_tokens=max_tokens)
                seconds: float | None = None
                by_deadline = False
                try:
                    while True:
                        seconds, by_deadline = self._budget()
                        try:
                            if seconds is None:
                                chunk = await chunks.__anext__()
                            else:
                                async with asyncio.timeout(seconds):
                                    chunk = await chunks.__anext__()
                        except StopAsyncIteration:
                            return
                        started = True
                        yield chunk
                except ContextLengthExceededError:
                    raise
                except (ProviderError, TimeoutError) as exc:
                    error = self._timed_out(entry, seconds, by_deadline) if isinstance(exc, TimeoutError) else exc
                    if started or isinstance(error, QuestionDeadlineExceeded):
                        raise error from None
                    if not await self._should_retry(entry, attempt, error):
                        failures.append(error)
                        self._log_fallback(index, error)
                        break
                finally:
                    aclose = getattr(chunks, "aclose", None)
                    if aclose is not None:
                        await aclose()
        raise self._all_failed(failures)

    # --- helpers ---------------------------------------------------------------------

    def _budget(self) -> tuple[float | None, bool]:
        """(seconds the next try may take, whether the question's deadline limits it)."""
        timeout = self.policy.call_timeout
        if timeout is None:
            scope = current_scope()
            timeout = scope.policy.call_timeout if scope is not None else None
        return call_budget(timeout)

    @staticmethod
    def _timed_out(entry: ChatModel, seconds: float | None, by_deadline: bool) -> ProviderTimeoutError:
        if by_deadline:
            return QuestionDeadlineExceeded(f"{_label(entry)}: the question's deadline passed during a model call",
                                            provider=entry.provider, model=entry.model)
        return ProviderTimeoutError(f"{_label(entry)}: no answer within {seconds or 0:g} s", provider=entry.provider,
                                    model=entry.model)

    async def _should_retry(self, entry: ChatModel, attempt: int, error: ProviderError) -> bool:
        """Sleep and return True when ``entry`` deserves another try after ``error``."""
        if not error.retryable or attempt >= self.policy.attempts:
            return False
        delay = self.policy.delay(attempt, error, self._rng)
        left = time_left()
        if left is not None and delay + COMPOSE_MARGIN_S >= left:
            log.info("%s failed (%s); a retry in %.2fs would outlive the question's deadline", _label(entry),
                     type(error).__name__, delay)
            return False
        log.info("%s failed (%s: %s); retry %d/%d in %.2fs", _label(entry), type(error).__name__, error,
                 attempt, self.policy.attempts - 1, delay)
        await self._sleep(delay)
        return True

    def _log_fallback(self, index: int, error: ProviderError) -> None:
        entry = self.models[index]
        if index + 1 < len(self.models):
            log.warning("%s gave up (%s: %s); falling back to %s", _label(entry), type(error).__name__, error,
                        _label(self.models[index + 1]))
        else:
            log.warning("%s gave up (%s: %s); no fallback left", _label(entry), type(error).__name__, error)

    def _all_failed(self, failures: list[ProviderError]) -> ProviderError:
        error = self._chain_failed(failures)
        if current_scope() is not None:  # inside a question this router WAS the retry policy: nothing above retries again
            error.retryable = False
        return error

    def _chain_failed(self, failures: list[ProviderError]) -> ProviderError:
        if self.unwrap_single and len(failures) == 1:
            return failures[0]
        summary = "; ".join(f"{e.provider or '?'}:{e.model or '?'}: {type(e).__name__} ({e})" for e in failures)
        error = AllProvidersFailedError(f"all {len(failures)} model(s) failed: {summary}", failures)
        error.__cause__ = failures[-1] if failures else None
        return error
