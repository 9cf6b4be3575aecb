"""``Anthropic``: Claude models through the official ``anthropic`` SDK (Messages API).

Decisions:
- Leading system messages become the separate ``system`` parameter. A system message
  later in the conversation (the loop's wrap-up instruction) becomes a user text block at
  its place, because the Messages API has no system role inside ``messages`` and moving
  it to the top would lose the "now" it means.
- Tool results are ``tool_result`` blocks in a user turn; consecutive ones (and any text
  that follows them) merge into ONE user turn, as the API requires roles to alternate.
  Empty text blocks are dropped (the API rejects them).
- ``max_tokens`` is required by the API: it defaults to 4096, configurable per instance
  and per call.
- Usage: ``input_tokens`` counts cache reads and cache writes too, because what matters
  to the caller is how much of the window the prompt used.
- Stop reasons map to Baton's (OpenAI) vocabulary: ``end_turn``/``stop_sequence`` ->
  ``stop``, ``tool_use`` -> ``tool_calls``, ``max_tokens`` -> ``length``; others pass
  through unchanged.
- One ``AsyncAnthropic`` client per instance, ``max_retries=0`` (``LLMRouter`` retries).
- Streaming reads the raw event stream (not the SDK's accumulating helper), so a broken
  partial JSON for a tool call becomes ``arguments_error`` instead of an exception.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from baton.dependency_waits import timed_chunks, waiting_on_dependency
from baton.errors import ConfigurationError, ProviderError
from baton.llm.arguments import parse_tool_call
from baton.llm.errors_map import map_sdk_error, transport_errors, unexpected_response
from baton.llm.transport import LoopClients, sdk_http_client
from baton.messages import LLMResponse, Message, StreamChunk, Tool

DEFAULT_MAX_TOKENS = 4096
DEFAULT_TIMEOUT = 30.0  # seconds per call (BATON_LLM_TIMEOUT); the question policy cuts a call at its deadline too
_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system prompt, Messages-API turns) for Baton messages."""
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []
    leading = True

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for m in messages:
        if m.role == "system" and leading:
            if m.content:
                system_parts.append(m.content)
            continue
        leading = False
        if m.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": {} if c.arguments_error else c.arguments}
                for c in m.tool_calls or ()
            ]
            add("assistant", blocks)
        elif m.role == "tool":
            add("user", [{"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content}])
        else:  # user, or a system message in mid-conversation
            add("user", [{"type": "text", "text": m.content}] if m.content else [])
    return "\n\n".join(system_parts), turns


def to_anthropic_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": t.to_json_schema()} for t in tools]


def _usage(usage: Any) -> dict[str, int]:
    if usage is None:
        return {}
    prompt = sum(int(getattr(usage, k, 0) or 0)
                 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
    return {"input_tokens": prompt, "output_tokens": int(getattr(usage, "output_tokens", 0) or 0)}


def _stop_reason(reason: str | None) -> str:
    return _STOP_REASONS.get(reason or "end_turn", reason or "stop")


class Anthropic:
    """A Claude model behind the Messages API."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
        context_window: int | None = None,
        client: Any = None,
    ) -> None:
        import anthropic

        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.context_window = context_window
        fresh = None
        if client is None:
            def fresh() -> Any:
                return anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0,
                                                http_client=sdk_http_client(anthropic))

            try:
                client = fresh()
            except anthropic.AnthropicError as exc:
                raise ConfigurationError(f"anthropic:{model}: {exc}") from exc
            if not any(getattr(client, name, None) for name in ("api_key", "auth_token", "credentials")):
                # The SDK would only notice at the first request, with a bare TypeError.
                raise ConfigurationError(f"anthropic:{model} has no credentials: pass api_key= or set ANTHROPIC_API_KEY")
        self._clients = LoopClients(client, fresh)
        # json.JSONDecodeError: the SDK parses bodies and SSE frames with json.loads
        self._sdk_errors: tuple[type[BaseException], ...] = (anthropic.AnthropicError, json.JSONDecodeError, *transport_errors())
        self.base_url = str(client.base_url).rstrip("/")

    @property
    def _client(self) -> Any:
        """The SDK client of the running event loop (``baton.llm.transport``)."""
        return self._clients.current()

    def __repr__(self) -> str:
        return f"Anthropic({self.model} @ {self.base_url})"

    @property
    def metadata_key(self) -> str:
        return f"anthropic@{self.base_url}"

    def _request(self, messages: Sequence[Message], tools: Sequence[Tool] | None, temperature: float | None,
                 max_tokens: int | None) -> dict[str, Any]:
        system, turns = to_anthropic_messages(messages)
        params: dict[str, Any] = {"model": self.model, "messages": turns,
                                  "max_tokens": max_tokens if max_tokens is not None else self.max_tokens}
        if system:
            params["system"] = system
        if tools:
            params["tools"] = to_anthropic_tools(tools)
        temperature = self.temperature if temperature is None else temperature
        if temperature is not None:
            params["temperature"] = temperature
        return params

    def _error(self, exc: BaseException) -> ProviderError:
        return map_sdk_error(exc, provider=self.provider, model=self.model,
                             secrets=(getattr(self._client, "api_key", None), getattr(self._client, "auth_token", None)))

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        params = self._request(messages, tools, temperature, max_tokens)
        try:
            with waiting_on_dependency():
                message = await self._client.messages.create(**params)
        except self._sdk_errors as exc:
            raise self._error(exc) from None  # the SDK's exception holds the whole body: never chained
        if not hasattr(message, "content"):
            raise unexpected_response(message, provider=self.provider, model=self.model)
        text: list[str] = []
        calls = []
        for block in message.content or ():
            kind = getattr(block, "type", None)
            if kind == "text":
                text.append(block.text)
            elif kind == "tool_use":
                calls.append(parse_tool_call(block.id, block.name, block.input))
        return LLMResponse(
            content="".join(text),
            tool_calls=calls,
            usage=_usage(message.usage),
            model=message.model or self.model,
            provider=self.provider,
            finish_reason=_stop_reason(message.stop_reason),
        )

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamChunk]:
        params = self._request(messages, tools, temperature, max_tokens)
        params["stream"] = True
        text: list[str] = []
        blocks: dict[int, dict[str, Any]] = {}
        usage: dict[str, int] = {}
        stop: str | None = None
        served_model = self.model
        try:
            with waiting_on_dependency():
                sdk_stream = await self._client.messages.create(**params)
        except self._sdk_errors as exc:
            raise self._error(exc) from None  # the SDK's exception holds the whole body: never chained
        try:
            async for event in timed_chunks(sdk_stream):
                kind = event.type
                if kind == "message_start":
                    served_model = event.message.model or served_model
                    usage = _usage(event.message.usage)
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = {"id": block.id, "name": block.name, "json": []}
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta" and delta.text:
                        text.append(delta.text)
                        yield StreamChunk(delta=delta.text)
                    elif delta.type == "input_json_delta" and event.index in blocks:
                        blocks[event.index]["json"].append(delta.partial_json)
                elif kind == "message_delta":
                    stop = event.delta.stop_reason or stop
                    if event.usage is not None and getattr(event.usage, "output_tokens", None) is not None:
                        usage["output_tokens"] = int(event.usage.output_tokens)
        except self._sdk_errors as exc:
            raise self._error(exc) from None  # the SDK's exception holds the whole body: never chained
        finally:
            await sdk_stream.close()
        calls = [parse_tool_call(b["id"], b["name"], "".join(b["json"])) for _, b in sorted(blocks.items())]
        yield StreamChunk(response=LLMResponse(
            content="".join(text),
            tool_calls=calls,
            usage=usage,
            model=served_model,
            provider=self.provider,
            finish_reason=_stop_reason(stop) if stop or not calls else "tool_calls",
        ))

    async def list_context_windows(self) -> dict[str, int]:
        """Model id -> ``max_input_tokens`` from the Models API (where it is reported)."""
        windows: dict[str, int] = {}
        try:
            async for info in self._client.models.list():
                window = getattr(info, "max_input_tokens", None)
                if isinstance(window, int) and window > 0:
                    windows[info.id] = window
        except self._sdk_errors as exc:
            raise self._error(exc) from None  # the SDK's exception holds the whole body: never chained
        return windows

    async def aclose(self) -> None:
        await self._clients.aclose()
