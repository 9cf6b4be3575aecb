"""The tool-calling loop (seed 002 "The tool-calling loop, in full").

Each iteration: (1) defend the context window — trim above ``trim_ratio``, then add the
wrap-up notice at ``wrap_up_ratio``; (2) call the model; (3) no tool calls means the final
answer; (4) record the assistant turn; (5) run its tool calls, concurrently unless a called
tool is sequential-only; (6) append the results in call order. The guard is
``max_iterations`` charged LLM calls; reaching it yields a partial answer built from the
tool outputs (see ``baton.loop.partial``).

Decisions the seed leaves open:

- **Wrap-up keeps the tools offered.** The notice is one system message appended at the end
  (never duplicated; it is protected from trimming, so it stays). Tools stay in the request
  because Anthropic refuses a conversation holding tool calls when no tools are defined,
  and because removing them changes the cached prompt prefix. If the model calls tools
  anyway they run; the guard still bounds the loop. Providers must accept a system message
  in the middle of the conversation (Anthropic's adapter folds it in).
- **Trimming target.** Above ``trim_ratio`` the oldest units are dropped until the prompt
  is back under ``trim_ratio`` — the least history lost. If that is impossible the loop
  logs a warning, emits ``loop.trimmed`` with ``fits=False`` and calls the model anyway.
- **Overflow.** ``ContextLengthExceededError`` raises the ledger's estimate to at least the
  window (the provider knows better), compresses to ``compress_ratio`` (dropping units, then
  shortening the largest tool results) and retries that call once; a second overflow on the
  same call raises. A later iteration gets its own single retry.
- **Refunds.** A ``ProviderError`` with ``retryable=True`` (typically what is left after the
  router's own retries) is not charged to ``max_iterations``; after ``max_refunds`` of them
  the last one is raised. An error's ``retry_after`` (429, 503) is honoured; otherwise the
  wait is ``refund_backoff_s`` doubled per refund (a lone provider has no router backing
  off for it); both capped at ``MAX_REFUND_WAIT_S`` and reported as ``wait_s``.
- **Streaming.** With ``settings.stream`` the loop uses ``model.stream()`` and emits
  ``llm.token`` per delta; a stream that ends without its final response chunk is a
  ``ProviderConnectionError`` (retryable, hence refunded). A stream that fails after some
  deltas says how many in its ``llm.error`` (``streamed_deltas``): that text is void, and a
  consumer showing tokens must drop it, since the refunded call streams its answer anew.
- **Conversation.** The caller's list is copied, never modified; ``LoopResult.messages`` is
  the final conversation, ending with the final assistant message (also for a partial
  answer) or, after ``stop_after_tools``, with that turn's tool results. The model is handed
  the loop's live list and must not keep it past the call.
- **Ids.** A turn whose tool calls have empty or repeated ids (some local models) gets fresh
  ids, since results are matched to calls by id.

Events: ``llm.start``, ``llm.end`` (usage, model, provider, duration_ms, finish_reason),
``llm.error``, ``llm.token``, ``tool.start``, ``tool.end`` (name, call_id, is_error,
duration_ms), ``loop.trimmed``, ``loop.wrap_up``, ``loop.compressed``, ``loop.refund``,
``loop.max_iterations``. Every payload carries ``iteration``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from baton.errors import ConfigurationError, ContextLengthExceededError, ProviderConnectionError, ProviderError
from baton.events import (
    NULL_TRACKER,
    Event,
    LLMEnd,
    LLMError,
    LLMStart,
    LLMToken,
    LoopCompressed,
    LoopMaxIterations,
    LoopRefund,
    LoopTrimmed,
    LoopWrapUp,
    WorkflowTracker,
)
from baton.llm.base import ChatModel
from baton.loop.dispatch import ToolDispatcher
from baton.loop.ledger import ContextLedger, tool_schema_tokens
from baton.loop.partial import compose_partial_answer
from baton.loop.results import LoopResult, ToolCallRecord
from baton.loop.settings import DEFAULT_SETTINGS, LoopSettings
from baton.loop.trimming import compress, drop_oldest
from baton.messages import LLMResponse, Message, Tool, ToolCall, add_usage
from baton.tools import RunnableTool

log = logging.getLogger("baton.loop")

WRAP_UP_INSTRUCTION = "IMPORTANT: Stop making tool calls. Compose final answer now."
MAX_REFUND_WAIT_S = 30.0

StopAfterTools = Callable[[list[ToolCallRecord]], bool]


class _Emitter:
    """Sends loop events to the tracker; a tracker that breaks its no-raise promise is logged,
    not allowed to fail the request."""

    __slots__ = ("tracker", "workflow_id", "active")

    def __init__(self, tracker: WorkflowTracker, workflow_id: str | None) -> None:
        self.tracker = tracker
        self.workflow_id = workflow_id
        self.active = tracker is not NULL_TRACKER

    def __call__(self, event: Event) -> None:
        if self.active:
            event.workflow_id = self.workflow_id
            try:
                self.tracker.emit(event)
            except Exception:
                log.exception("tracker %r failed on %s event", self.tracker, event.type)


class _Loop:
    """The state of one ``run_loop`` call (never shared between requests)."""

    def __init__(self, model: ChatModel, messages: Sequence[Message], tools: Sequence[RunnableTool], context_window: int,
                 settings: LoopSettings, emit: _Emitter, stop_after_tools: StopAfterTools | None) -> None:
        self.model = model
        self.settings = settings
        self.emit = emit
        self.stop_after_tools = stop_after_tools
        self.dispatcher = ToolDispatcher(tools)
        self.specs: list[Tool] | None = self.dispatcher.specs or None
        self.ledger = ContextLedger(messages, context_window, fixed_tokens=tool_schema_tokens(self.dispatcher.specs))
        self.question = next((m for m in reversed(self.ledger.messages) if m.role == "user"), None)
        self.usage: dict[str, int] = {}
        self.records: list[ToolCallRecord] = []
        self.iterations = 0
        self.llm_calls = 0
        self.refunds = 0
        self.wrapped_up = False
        self.trimmed_messages = 0
        self.compressions = 0
        self.last_prompt_tokens = 0
        self.streamed_deltas = 0  # text deltas of the current streamed call
        self.last_note = ""  # the latest non-empty text the model sent along with tool calls
        self.last_response = LLMResponse(model=getattr(model, "model", ""), provider=getattr(model, "provider", ""))

    def is_protected(self, message: Message) -> bool:
        return message.role == "system" or message is self.question

    async def run(self) -> LoopResult:
        settings = self.settings
        while self.iterations < settings.max_iterations:
            iteration = self.iterations + 1
            self.relieve_pressure(iteration)
            try:
                response = await self.call_model(iteration)
            except ProviderError as exc:
                if not exc.retryable:
                    raise
                await self.refund(iteration, exc)
                continue
            self.iterations = iteration
            if not response.tool_calls:
                return self.finish(response.content, response.finish_reason or "stop")
            if response.content:
                self.last_note = response.content
            calls = _unique_ids(response.tool_calls, iteration)
            self.ledger.append(Message("assistant", response.content, tool_calls=calls))
            turn = await self.dispatcher.run_turn(calls, iteration, self.emit)
            append = self.ledger.append
            for record in turn:
                append(Message("tool", record.output.text, tool_call_id=record.call.id, name=record.call.name))
            self.records.extend(turn)
            if self.stop_after_tools is not None and self.stop_after_tools(turn):
                return self.result(response.content, "stopped_after_tools", stopped_early=True)
        return self.give_partial_answer()

    # --- 1. context pressure ------------------------------------------------------------

    def relieve_pressure(self, iteration: int) -> None:
        ledger, settings = self.ledger, self.settings
        window = ledger.window
        if ledger.prompt_tokens > settings.trim_ratio * window:
            before = ledger.prompt_tokens
            cut = drop_oldest(ledger.messages, ledger.counts, ledger.message_budget(settings.trim_ratio), self.is_protected)
            if cut.removed:
                ledger.replace(cut.messages, cut.counts)
                self.trimmed_messages += cut.removed
            if not cut.fits:
                log.warning(
                    "context at %d of %d tokens: trimming removed %d messages and cannot get under %.0f%% "
                    "(system prompt, question and latest turn are kept); calling the model anyway",
                    ledger.prompt_tokens, window, cut.removed, settings.trim_ratio * 100,
                )
            self.emit(LoopTrimmed(iteration=iteration, removed_messages=cut.removed, tokens_before=before,
                                  tokens_after=ledger.prompt_tokens, context_window=window, fits=cut.fits))
        if not self.wrapped_up and (reached := ledger.prompt_tokens) >= settings.wrap_up_ratio * window:
            self.wrapped_up = True
            ledger.append(Message("system", WRAP_UP_INSTRUCTION))
            self.emit(LoopWrapUp(iteration=iteration, prompt_tokens=reached, context_window=window))

    # --- 2. the model call --------------------------------------------------------------

    async def call_model(self, iteration: int) -> LLMResponse:
        """One charged call: on a context overflow, compress and retry once."""
        try:
            return await self.attempt(iteration)
        except ContextLengthExceededError as exc:
            self.ledger.observe_overflow(self.ledger.raw_tokens)
            self.compress(iteration, exc)
            return await self.attempt(iteration)

    def compress(self, iteration: int, exc: ContextLengthExceededError) -> None:
        ledger = self.ledger
        before = ledger.prompt_tokens
        cut = compress(ledger.messages, ledger.counts, ledger.message_budget(self.settings.compress_ratio), self.is_protected)
        ledger.replace(cut.messages, cut.counts)
        self.trimmed_messages += cut.removed
        self.compressions += 1
        if not cut.fits:
            log.warning("context overflow: compression to %.0f%% of %d tokens fell short (%d tokens); retrying once anyway",
                        self.settings.compress_ratio * 100, ledger.window, ledger.prompt_tokens)
        self.emit(LoopCompressed(iteration=iteration, removed_messages=cut.removed, shortened_results=cut.shortened,
                                 tokens_before=before, tokens_after=ledger.prompt_tokens, context_window=ledger.window,
                                 fits=cut.fits, error=str(exc)))

    async def attempt(self, iteration: int) -> LLMResponse:
        ledger, model, emit = self.ledger, self.model, self.emit
        raw = ledger.raw_tokens
        prompt_tokens = ledger.prompt_tokens
        self.llm_calls += 1
        emit(LLMStart(iteration=iteration, messages=len(ledger.messages), prompt_tokens=prompt_tokens,
                      tools=len(self.dispatcher.specs), stream=self.settings.stream))
        started = time.perf_counter()
        self.streamed_deltas = 0
        try:
            if self.settings.stream:
                response = await self.stream(iteration)
            else:
                response = await model.complete(ledger.messages, self.specs)
        except Exception as exc:
            emit(LLMError(iteration=iteration, error_type=type(exc).__name__, message=str(exc),
                          retryable=isinstance(exc, ProviderError) and exc.retryable, streamed_deltas=self.streamed_deltas,
                          duration_ms=(time.perf_counter() - started) * 1000.0))
            raise
        duration_ms = (time.perf_counter() - started) * 1000.0
        add_usage(self.usage, response.usage)
        reported = response.usage.get("input_tokens", 0) if response.usage else 0
        if reported:
            ledger.observe_reported(reported, raw)
        self.last_prompt_tokens = reported or prompt_tokens
        self.last_response = response
        emit(LLMEnd(iteration=iteration, usage=response.usage, model=response.model, provider=response.provider,
                    duration_ms=duration_ms, finish_reason=response.finish_reason, tool_calls=len(response.tool_calls)))
        return response

    async def stream(self, iteration: int) -> LLMResponse:
        response: LLMResponse | None = None
        emit = self.emit
        async for chunk in self.model.stream(self.ledger.messages, self.specs):
            if chunk.delta:
                self.streamed_deltas += 1
                emit(LLMToken(iteration=iteration, delta=chunk.delta))
            if chunk.response is not None:
                response = chunk.response
        if response is None:
            raise ProviderConnectionError(
                "the model's stream ended without its final response", provider=self.model.provider, model=self.model.model
            )
        return response

    async def refund(self, iteration: int, exc: ProviderError) -> None:
        self.refunds += 1
        settings = self.settings
        exhausted = self.refunds > settings.max_refunds
        retry_after = getattr(exc, "retry_after", None)
        wait = 0.0 if exhausted else min(
            MAX_REFUND_WAIT_S,
            float(retry_after) if retry_after is not None else settings.refund_backoff_s * 2 ** (self.refunds - 1),
        )
        self.emit(LoopRefund(iteration=iteration, refunds=self.refunds, max_refunds=settings.max_refunds,
                             error_type=type(exc).__name__, message=str(exc), exhausted=exhausted, wait_s=wait))
        if exhausted:
            raise exc
        log.info("recoverable provider error at iteration %d, not charged (%d/%d refunds), retrying in %.2fs: %s",
                 iteration, self.refunds, settings.max_refunds, wait, exc)
        if wait > 0:
            await asyncio.sleep(wait)

    # --- endings ------------------------------------------------------------------------

    def finish(self, content: str, finish_reason: str) -> LoopResult:
        self.ledger.append(Message("assistant", content))
        return self.result(content, finish_reason)

    def give_partial_answer(self) -> LoopResult:
        content = compose_partial_answer(self.records, max_iterations=self.settings.max_iterations, last_note=self.last_note)
        self.emit(LoopMaxIterations(iteration=self.iterations, max_iterations=self.settings.max_iterations,
                                    tool_calls=len(self.records)))
        log.info("loop reached max_iterations=%d; answering from %d tool results",
                 self.settings.max_iterations, len(self.records))
        self.ledger.append(Message("assistant", content))
        return self.result(content, "max_iterations", partial=True)

    def result(self, content: str, finish_reason: str, *, partial: bool = False, stopped_early: bool = False) -> LoopResult:
        last = self.last_response
        return LoopResult(
            content=content, messages=self.ledger.messages, iterations=self.iterations, llm_calls=self.llm_calls,
            usage=self.usage, tool_calls=self.records, partial=partial, stopped_early=stopped_early,
            finish_reason=finish_reason, model=last.model, provider=last.provider,
            context_usage_pct=round(100 * self.last_prompt_tokens / self.ledger.window),
            refunds=self.refunds, wrapped_up=self.wrapped_up, trimmed_messages=self.trimmed_messages,
            compressions=self.compressions,
        )


def _unique_ids(calls: list[ToolCall], iteration: int) -> list[ToolCall]:
    """The calls as they are, unless an id is empty or repeated within the turn."""
    if len(calls) == 1:
        if calls[0].id:
            return calls
    elif all(c.id for c in calls) and len({c.id for c in calls}) == len(calls):
        return calls
    seen: set[str] = set()
    fixed: list[ToolCall] = []
    for n, call in enumerate(calls):
        if not call.id or call.id in seen:
            call = ToolCall(f"call_{iteration}_{n}", call.name, call.arguments, call.raw_arguments, call.arguments_error)
        seen.add(call.id)
        fixed.append(call)
    return fixed


async def run_loop(
    model: ChatModel,
    messages: list[Message],
    tools: Sequence[RunnableTool] = (),
    *,
    context_window: int,
    settings: LoopSettings = DEFAULT_SETTINGS,
    tracker: WorkflowTracker = NULL_TRACKER,
    workflow_id: str | None = None,
    stop_after_tools: StopAfterTools | None = None,
) -> LoopResult:
    """Run the tool-calling loop until the model answers, the guard stops it, or
    ``stop_after_tools(records_of_the_turn)`` returns True after a turn's tools ran (then no
    further LLM call is made: ``stopped_early``).

    Raises ``ConfigurationError`` for a non-positive window or duplicate tool names, a
    non-retryable ``ProviderError`` at once, ``ContextLengthExceededError`` when a call
    overflows again after compression, and the last retryable ``ProviderError`` once
    ``settings.max_refunds`` are spent. Tool failures never raise: they are records.
    """
    if not isinstance(context_window, int) or context_window <= 0:
        raise ConfigurationError(f"context_window must be a positive number of tokens, got {context_window!r}")
    loop = _Loop(model, messages, tools, context_window, settings, _Emitter(tracker, workflow_id), stop_after_tools)
    return await loop.run()
