"""The one async protocol every LLM provider implements.

``complete`` returns a whole ``LLMResponse``; ``stream`` yields text deltas and ends with a
chunk carrying the assembled response (tool calls and usage included), so a caller that
streams never has to reassemble tool calls itself. Providers raise only ``ProviderError``
subclasses (``baton.errors``), never their SDK's exceptions.
"""

from __future__ import annotations

from typing import AsyncIterator, Protocol, Sequence, runtime_checkable

from baton.messages import LLMResponse, Message, StreamChunk, Tool


@runtime_checkable
class ChatModel(Protocol):
    """A provider bound to one model."""

    provider: str
    model: str

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMResponse: ...

    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamChunk]: ...
