"""The one async protocol every LLM provider implements.

``complete`` returns a whole ``LLMResponse``; ``stream`` yields text deltas and ends with a
chunk carrying the assembled response (tool calls and usage included), so a caller that
streams never has to reassemble tool calls itself. Providers raise only ``ProviderError``
subclasses (``baton.errors``), never their SDK's exceptions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import ClassVar, Protocol, runtime_checkable

from baton.messages import LLMResponse, Message, StreamChunk, Tool


@runtime_checkable
class ChatModel(Protocol):
    """A provider bound to one model. ``provider`` and ``model`` are read-only here: a plain
    attribute satisfies them, and so does a property (``LLMRouter`` names its first entry)."""

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

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


class RoutingStandIn:
    """Base of the ``ChatModel`` stand-ins that route without a language model (the
    lexical router, the verified-question route): the orchestrator may drive its loop with
    one, but a specialist must never take one as its model (``is_language_model``).

    ``is_llm`` stays for code written against the attribute before this class existed."""

    is_llm: ClassVar[bool] = False


def is_language_model(model: object) -> bool:
    """True for a model a specialist can ask to write SQL or prose: present, and not a
    ``RoutingStandIn``."""
    return model is not None and not isinstance(model, RoutingStandIn)
