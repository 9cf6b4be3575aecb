"""Public test doubles: ``ScriptedModel`` and ``FunctionModel``.

They implement the same ``ChatModel`` protocol as the real providers, so users test their
own agents exactly the way Baton tests its own: deterministic LLM behaviour, no network,
no mocks.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from baton.dependency_waits import waiting_on_dependency
from baton.errors import ScriptExhaustedError
from baton.messages import LLMResponse, Message, StreamChunk, Tool, ToolCall

Script = LLMResponse | str | BaseException


def _as_response(item: Script, model: str, provider: str) -> LLMResponse:
    if isinstance(item, BaseException):
        raise item
    response = LLMResponse(content=item) if isinstance(item, str) else item
    if not response.model:
        response.model = model
    if not response.provider:
        response.provider = provider
    if not response.finish_reason:
        response.finish_reason = "tool_calls" if response.tool_calls else "stop"
    return response


async def _stream_response(response: LLMResponse) -> AsyncIterator[StreamChunk]:
    words = response.content.split(" ")
    for i, word in enumerate(words):
        if word or i:
            yield StreamChunk(delta=word if i == 0 else " " + word)
    yield StreamChunk(response=response)


class ScriptedModel:
    """Returns the given responses in order, one per call.

    An item may be an ``LLMResponse``, a plain string (a text answer) or an exception
    instance (raised by that call, to script provider failures). ``calls`` records the
    messages and tools of every call. Running past the end raises ``ScriptExhaustedError``.
    ``context_window`` is what the window resolver reports for this model.
    """

    provider = "scripted"

    def __init__(self, responses: Sequence[Script], *, model: str = "scripted-model", context_window: int = 128_000) -> None:
        self.model = model
        self.context_window = context_window
        self._responses = list(responses)
        self._next = 0
        self.calls: list[tuple[list[Message], list[Tool]]] = []

    @property
    def remaining(self) -> int:
        return len(self._responses) - self._next

    async def complete(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                       temperature: float | None = None, max_tokens: int | None = None) -> LLMResponse:
        self.calls.append((list(messages), list(tools or ())))
        if self._next >= len(self._responses):
            raise ScriptExhaustedError(
                f"ScriptedModel has {len(self._responses)} responses and was called a "
                f"{self._next + 1}th time"
            )
        item = self._responses[self._next]
        self._next += 1
        return _as_response(item, self.model, self.provider)

    async def stream(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                     temperature: float | None = None, max_tokens: int | None = None) -> AsyncIterator[StreamChunk]:
        response = await self.complete(messages, tools, temperature=temperature, max_tokens=max_tokens)
        async for chunk in _stream_response(response):
            yield chunk


ModelFunction = Callable[[list[Message], list[Tool]], "Script | Awaitable[Script]"]


class FunctionModel:
    """Answers each call with ``fn(messages, tools)`` (sync or async).

    The function may return an ``LLMResponse`` or a string, or raise. It is called with
    fresh lists, so it can inspect the conversation to decide (route by the question, call a
    tool first and answer after the tool result, ...). ``call_count`` counts calls.
    """

    provider = "function"

    def __init__(self, fn: ModelFunction, *, model: str = "function-model", context_window: int = 128_000) -> None:
        self.fn = fn
        self.model = model
        self.context_window = context_window
        self.call_count = 0

    async def complete(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                       temperature: float | None = None, max_tokens: int | None = None) -> LLMResponse:
        self.call_count += 1
        result = self.fn(list(messages), list(tools or ()))
        if inspect.isawaitable(result):
            with waiting_on_dependency():  # an async function stands in for a model's wait (``baton.dependency_waits``)
                result = await result
        return _as_response(result, self.model, self.provider)

    async def stream(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                     temperature: float | None = None, max_tokens: int | None = None) -> AsyncIterator[StreamChunk]:
        response = await self.complete(messages, tools, temperature=temperature, max_tokens=max_tokens)
        async for chunk in _stream_response(response):
            yield chunk


def tool_call(name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None) -> ToolCall:
    """Shorthand for scripting a tool call: ``LLMResponse(tool_calls=[tool_call("sql", {...})])``."""
    return ToolCall(id=id or f"call_{next(_call_ids)}", name=name, arguments=dict(arguments or {}))


_call_ids = itertools.count(1)


async def sleep_then(delay: float, response: Script) -> Script:
    """Helper for latency-shaped FunctionModels: ``return sleep_then(0.2, reply)``."""
    await asyncio.sleep(delay)
    return response
