"""Models under the question's policy: the binding of ``baton.llm.policy`` (the question
scope, its retry policy and deadline) to ``baton.llm.router`` (the mechanism that applies
them).

``with_policy(model)`` is what ``BaseAgent.model_for``, the orchestrator's routing model and
the SQL specialist's repair turns go through; ``ScopedModel`` is for a part that keeps a model
of its own and must apply the policy at each call rather than when it was built. Kept apart
from ``policy`` so that the policy (data and a context variable) knows no router and the
router knows no preference strings: the imports run one way.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any, overload

from baton.llm.base import ChatModel, is_language_model
from baton.llm.policy import current_scope
from baton.llm.router import LLMRouter
from baton.messages import LLMResponse, Message, StreamChunk, Tool

_wrapped: weakref.WeakKeyDictionary[ChatModel, LLMRouter] = weakref.WeakKeyDictionary()


@overload
def with_policy(model: ChatModel) -> ChatModel: ...
@overload
def with_policy(model: None) -> None: ...
@overload
def with_policy(model: ChatModel | None) -> ChatModel | None: ...


def with_policy(model: ChatModel | None) -> ChatModel | None:
    """``model`` under the active question's policy: an ``LLMRouter`` as is (it applies its
    own retry policy, with the scope's call timeout and deadline), a routing stand-in that is
    no language model as is, anything else wrapped in a one-entry ``LLMRouter`` (cached per
    model and policy). Outside a question scope: ``model`` unchanged."""
    scope = current_scope()
    if scope is None or model is None or isinstance(model, LLMRouter) or not is_language_model(model):
        return model
    try:
        cached = _wrapped.get(model)
    except TypeError:  # not weak-referenceable: a fresh router (cheap)
        return LLMRouter([model], policy=scope.policy, unwrap_single=True)
    if cached is None or cached.policy is not scope.policy:
        cached = LLMRouter([model], policy=scope.policy, unwrap_single=True)
        try:
            _wrapped[model] = cached
        except TypeError:
            pass
    return cached


class ScopedModel:
    """A model that applies the question's policy at each call (``with_policy`` when the
    call is made, not when the holder was built): for parts that keep a model of their own
    outside ``BaseAgent.model_for`` (the pipeline planner)."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.context_window = getattr(inner, "context_window", None)

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                 temperature: float | None = None, max_tokens: int | None = None) -> Coroutine[Any, Any, LLMResponse]:
        return with_policy(self.inner).complete(messages, tools, temperature=temperature, max_tokens=max_tokens)

    def stream(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
               temperature: float | None = None, max_tokens: int | None = None) -> AsyncIterator[StreamChunk]:
        return with_policy(self.inner).stream(messages, tools, temperature=temperature, max_tokens=max_tokens)

    def __repr__(self) -> str:
        return f"ScopedModel({self.inner!r})"
