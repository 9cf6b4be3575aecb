"""``OpenAICompatible``: any chat-completions server through the official ``openai`` SDK.

One class serves OpenAI, OpenRouter, Ollama (``/v1``), vLLM, llama.cpp server and LM
Studio: they differ only in base URL, key and a few quirks handled here.

Decisions:
- One ``AsyncOpenAI`` client per instance and event loop, shared by every request there:
  the SDK's transport pools connections and holds up under hundreds of concurrent calls
  where a hand-rolled httpx client did not (FACTS.md); its aiohttp transport when installed,
  which costs less CPU per call (``baton.llm.transport``).
- ``max_retries=0`` on the SDK: ``LLMRouter`` owns retries, so a 429 is never retried
  twice by two layers with two policies.
- Calls are posted with the SDK's own client (``AsyncOpenAI.post``: its transport,
  retries off, error classes, SSE parser) but without its per-call parameter transform,
  which costs about a millisecond of CPU per call and changes nothing for these plain
  parameters (``_create``).
- ``max_tokens`` goes out as ``max_completion_tokens`` to api.openai.com (its reasoning
  models reject the old name) and as ``max_tokens`` elsewhere (what the other servers read).
- Streaming asks for usage (``stream_options.include_usage``) unless ``stream_usage=False``
  (for an old server that rejects the option).
- A tool call whose arguments are not a JSON object keeps its text and the reason
  (``baton.llm.arguments``); in history it is echoed as ``{}``.
- A streamed text that ends without a finish reason was cut (the SDK ends a dropped
  stream quietly): ``ProviderConnectionError``, never a half answer passed off as whole.
- Finish reasons use the OpenAI vocabulary, which Baton uses everywhere: ``stop``,
  ``tool_calls``, ``length``, ``content_filter``. A server that answers tool calls with
  ``stop`` (Ollama does) is normalised to ``tool_calls``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from baton.dependency_waits import timed_chunks, waiting_on_dependency
from baton.errors import ConfigurationError, ProviderConnectionError, ProviderError
from baton.llm.arguments import parse_tool_call, wire_arguments
from baton.llm.errors_map import map_sdk_error, transport_errors, unexpected_response
from baton.llm.transport import LoopClients, sdk_http_client
from baton.messages import LLMResponse, Message, StreamChunk, Tool, ToolCall

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 30.0  # seconds per call (BATON_LLM_TIMEOUT); the question policy cuts a call at its deadline too


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Baton messages in chat-completions form (tool calls with JSON-string arguments)."""
    wire: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            wire.append({
                "role": "assistant",
                "content": m.content or None,
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": wire_arguments(c)}}
                    for c in m.tool_calls
                ],
            })
        else:
            wire.append({"role": m.role, "content": m.content})
    return wire


def to_openai_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.to_json_schema()}}
        for t in tools
    ]


class WireTools:
    """The chat-completions form of the tool lists a model is called with, kept for the same
    ``Tool`` objects: an agent's tools are made once and offered on every call, and every
    call in flight held its own copy of their schemas (about 1.4 KiB for one small tool) until
    its model answered. At most ``size`` lists (the oldest forgotten); a list is made again when
    a tool's name or description is no longer what it was."""

    __slots__ = ("_lists", "_size")

    def __init__(self, size: int = 16) -> None:
        self._lists: dict[tuple[int, ...], tuple[Sequence[Tool], tuple[tuple[str, str], ...], list[dict[str, Any]]]] = {}
        self._size = size

    def __call__(self, tools: Sequence[Tool]) -> list[dict[str, Any]]:
        key = tuple(map(id, tools))
        names = tuple((t.name, t.description) for t in tools)
        kept = self._lists.get(key)
        if kept is not None and kept[1] == names and all(a is b for a, b in zip(kept[0], tools)):
            return kept[2]
        wire = to_openai_tools(tools)
        if len(self._lists) >= self._size:
            del self._lists[next(iter(self._lists))]
        self._lists[key] = (tuple(tools), names, wire)
        return wire


def _finish_reason(reason: str | None, has_tool_calls: bool) -> str:
    if reason == "function_call" or (has_tool_calls and reason in (None, "", "stop")):
        return "tool_calls"
    return reason or "stop"


def _usage(usage: Any) -> dict[str, int]:
    if usage is None:
        return {}
    return {"input_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "output_tokens": int(getattr(usage, "completion_tokens", 0) or 0)}


class OpenAICompatible:
    """A chat-completions model. ``provider`` is a label (``openai``, ``openrouter``,
    ``ollama``...) used in logs, responses and window lookups; by default ``openai`` for
    api.openai.com and ``openai-compatible`` for any other base URL."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        provider: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_tokens: int | None = None,
        temperature: float | None = None,
        context_window: int | None = None,
        default_headers: Mapping[str, str] | None = None,
        stream_usage: bool = True,
        client: Any = None,
    ) -> None:
        import openai

        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.context_window = context_window
        self.stream_usage = stream_usage
        fresh = None
        if client is None:
            def fresh() -> Any:
                return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0,
                                          default_headers=dict(default_headers or {}) or None,
                                          http_client=sdk_http_client(openai))

            try:
                client = fresh()
            except openai.OpenAIError as exc:
                raise ConfigurationError(f"{provider or 'openai'}:{model}: {exc}") from exc
        self._clients = LoopClients(client, fresh)
        self._wire_tools = WireTools()
        self._direct = _direct_post(client)
        # json.JSONDecodeError: the SDK parses bodies and SSE frames with json.loads
        self._sdk_errors: tuple[type[BaseException], ...] = (openai.OpenAIError, json.JSONDecodeError, *transport_errors())
        self.base_url = str(client.base_url).rstrip("/")
        self._max_tokens_param = "max_completion_tokens" if self.base_url == OPENAI_BASE_URL else "max_tokens"
        self.provider = provider or ("openai" if self.base_url == OPENAI_BASE_URL else "openai-compatible")

    @property
    def _client(self) -> Any:
        """The SDK client of the running event loop (``baton.llm.transport``)."""
        return self._clients.current()

    def __repr__(self) -> str:
        return f"OpenAICompatible({self.provider}:{self.model} @ {self.base_url})"

    @property
    def metadata_key(self) -> str:
        """Models sharing this key share one model list (``windows.ContextWindowResolver``)."""
        return f"openai-compatible@{self.base_url}"

    def _request(self, messages: Sequence[Message], tools: Sequence[Tool] | None, temperature: float | None,
                 max_tokens: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(messages)}
        if tools:
            params["tools"] = self._wire_tools(tools)  # the same list each call: never changed after (``WireTools``)
        temperature = self.temperature if temperature is None else temperature
        if temperature is not None:
            params["temperature"] = temperature
        max_tokens = self.max_tokens if max_tokens is None else max_tokens
        if max_tokens is not None:
            params[self._max_tokens_param] = max_tokens
        return params

    async def _create(self, params: dict[str, Any]) -> Any:
        """``chat.completions.create(**params)``, minus the SDK's per-call walk over the
        parameters (``_transform``: aliases and omitted values, of which these plain dicts
        have none) — about a millisecond of CPU per call. A client without the SDK's
        ``post`` (an injected double) goes through ``create``."""
        if self._direct is None:
            return await self._client.chat.completions.create(**params)
        completion_cls, chunk_stream_cls, options = self._direct
        return await self._client.post("/chat/completions", body=params, cast_to=completion_cls, options=options,
                                       stream=bool(params.get("stream")), stream_cls=chunk_stream_cls)

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
                completion = await self._create(params)
        except self._sdk_errors as exc:
            raise self._error(exc) from None  # the SDK's exception holds the whole body: never chained
        if not hasattr(completion, "choices"):
            raise unexpected_response(completion, provider=self.provider, model=self.model)
        if not completion.choices:
            return LLMResponse(model=completion.model or self.model, provider=self.provider,
                               usage=_usage(completion.usage), finish_reason="stop")
        choice = completion.choices[0]
        calls = [
            parse_tool_call(c.id or f"call_{uuid.uuid4().hex[:12]}", c.function.name, c.function.arguments)
            for c in (choice.message.tool_calls or ())
            if getattr(c, "function", None) is not None
        ]
        return LLMResponse(
            content=choice.message.content or "",
            tool_calls=calls,
            usage=_usage(completion.usage),
            model=completion.model or self.model,
            provider=self.provider,
            finish_reason=_finish_reason(choice.finish_reason, bool(calls)),
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
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage: dict[str, int] = {}
        finish: str | None = None
        served_model = self.model
        try:
            with waiting_on_dependency():
                sdk_stream = await self._create(params)
        except self._sdk_errors as exc:
            raise self._error(exc) from None  # the SDK's exception holds the whole body: never chained
        try:
            async for chunk in timed_chunks(sdk_stream):
                served_model = chunk.model or served_model
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices or ():
                    if choice.finish_reason:
                        finish = choice.finish_reason
                    delta = choice.delta
                    if delta is None:
                        continue
                    for part in delta.tool_calls or ():
                        slot = _slot_for(calls, part)
                        if part.id:
                            slot["id"] = part.id
                        if part.function is not None:
                            if part.function.name:
                                slot["name"] = part.function.name
                            if part.function.arguments:
                                slot["arguments"].append(part.function.arguments)
                    if delta.content:
                        text.append(delta.content)
                        yield StreamChunk(delta=delta.content)
        except self._sdk_errors as exc:
            raise self._error(exc) from None  # the SDK's exception holds the whole body: never chained
        finally:
            await sdk_stream.close()
        if finish is None and not calls:
            # Text that stopped without a finish reason: the connection dropped mid-answer
            # (the SDK ends a cut stream quietly). Never pass half an answer off as whole.
            raise ProviderConnectionError(f"{self.provider}/{self.model}: the stream ended before the model finished",
                                          provider=self.provider, model=self.model)
        tool_calls: list[ToolCall] = [
            parse_tool_call(slot["id"] or f"call_{uuid.uuid4().hex[:12]}", slot["name"], "".join(slot["arguments"]))
            for _, slot in sorted(calls.items())
        ]
        yield StreamChunk(response=LLMResponse(
            content="".join(text),
            tool_calls=tool_calls,
            usage=usage,
            model=served_model,
            provider=self.provider,
            finish_reason=_finish_reason(finish, bool(tool_calls)),
        ))

    async def list_context_windows(self) -> dict[str, int]:
        """Model id -> context window from ``GET /models``, for the servers that say:
        OpenRouter ``context_length`` (or ``top_provider.context_length``), vLLM
        ``max_model_len``, LM Studio ``max_context_length``, llama.cpp ``meta.n_ctx``.
        llama.cpp's ``n_ctx_train`` is ignored: the server may run a smaller context."""
        windows: dict[str, int] = {}
        try:
            async for entry in self._client.models.list():
                data = entry.to_dict() if hasattr(entry, "to_dict") else dict(entry)
                window = window_from_model_entry(data)
                if window:
                    windows[str(data.get("id"))] = window
        except self._sdk_errors as exc:
            raise self._error(exc) from None  # the SDK's exception holds the whole body: never chained
        return windows

    async def aclose(self) -> None:
        await self._clients.aclose()


def _direct_post(client: Any) -> tuple[Any, Any, Any] | None:
    """What ``_create`` needs to post directly, or None when this SDK or client is not the
    one it was written against (then ``create`` is used)."""
    try:
        import openai
        from openai._base_client import make_request_options
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        if not isinstance(client, openai.AsyncOpenAI):
            return None
        return ChatCompletion, openai.AsyncStream[ChatCompletionChunk], make_request_options(security={"bearer_auth": True})
    except Exception:
        return None


def _slot_for(calls: dict[int, dict[str, Any]], part: Any) -> dict[str, Any]:
    """The call a streamed tool-call fragment belongs to. Servers that omit ``index``
    (some local ones) send the id on a call's first fragment only: a fragment without an
    index continues the latest call unless it brings a new id."""
    index = part.index
    if index is None:
        latest = max(calls) if calls else None
        continues = latest is not None and (not part.id or calls[latest]["id"] in (None, part.id))
        index = latest if continues else (latest + 1 if latest is not None else 0)
    return calls.setdefault(index, {"id": None, "name": "", "arguments": []})


def window_from_model_entry(data: Mapping[str, Any]) -> int | None:
    """The context window a ``/models`` entry declares, if any."""
    candidates = [data.get("context_length"), data.get("max_model_len"), data.get("max_context_length"),
                  data.get("context_window")]
    top = data.get("top_provider")
    if isinstance(top, Mapping):
        candidates.append(top.get("context_length"))
    meta = data.get("meta")
    if isinstance(meta, Mapping):
        candidates.append(meta.get("n_ctx"))
    for value in candidates:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value)
    return None
