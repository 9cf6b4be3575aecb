"""Model preferences at three levels, user -> project -> app (seed 002 AgentContext:
"Provider/model preferences flow down from user -> project defaults -> app defaults").

``ModelPreferences(user=..., project=..., app=...).router()`` concatenates the levels in that
order, each level a model, a model string (``"openai:gpt-4o-mini"``, comma-separated for
several; ``baton.llm.config``) or a list of those, drops duplicates (same provider, model and
endpoint; the first keeps its place) and, when ``preferred_provider`` is given, moves that
provider's entries to the front keeping their order. ``model_choice(context.model,
context.preferred_provider)`` turns a request's ``AgentContext`` preferences into the user
level. An entry that cannot be built (say, a user preference for a provider whose key is not
configured) is skipped with a WARNING; only when nothing is left does resolution fail, with a
``ConfigurationError`` listing why.

This sits above both ``config`` (which builds models from strings, and routers for chains)
and ``router``: a router knows models, not the strings that name them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from baton.errors import ConfigurationError
from baton.llm.base import ChatModel
from baton.llm.config import model_from_string
from baton.llm.policy import RetryPolicy
from baton.llm.router import LLMRouter, Sleep
from baton.settings import Settings

log = logging.getLogger(__name__)

ModelChoice = ChatModel | str | Sequence[ChatModel | str] | None


def _identity(model: ChatModel) -> tuple[str, str, str]:
    return (model.provider, model.model, str(getattr(model, "base_url", "") or ""))


@dataclass(frozen=True)
class ModelPreferences:
    """Model choices at three levels, most specific first (see the module docstring)."""

    user: ModelChoice = None
    project: ModelChoice = None
    app: ModelChoice = None
    preferred_provider: str | None = None

    def chain(self, env: Mapping[str, str] | None = None, *, settings: Settings | None = None) -> list[ChatModel]:
        """The ordered, de-duplicated models; ``ConfigurationError`` when none can be built.
        Model strings take their keys from ``settings``, else ``Settings.from_env(env)``."""
        settings = settings if settings is not None else Settings.from_env(env)
        models: list[ChatModel] = []
        problems: list[str] = []
        for level, choice in (("user", self.user), ("project", self.project), ("app", self.app)):
            for item in _flatten(choice):
                if isinstance(item, str):
                    try:
                        built = model_from_string(item, settings=settings)
                    except ConfigurationError as exc:
                        log.warning("skipping %s model preference %r: %s", level, item, exc)
                        problems.append(f"{level} {item!r}: {exc}")
                        continue
                    models.extend(built.models if isinstance(built, LLMRouter) else [built])
                else:
                    models.append(item)
        seen: set[tuple[str, str, str]] = set()
        unique = []
        for model in models:
            key = _identity(model)
            if key not in seen:
                seen.add(key)
                unique.append(model)
        if self.preferred_provider:
            unique.sort(key=lambda m: m.provider != self.preferred_provider)  # stable: keeps order
        if not unique:
            detail = "; ".join(problems) or "no model was given at any level"
            raise ConfigurationError(f"no usable model: {detail}. Set BATON_MODEL, e.g. BATON_MODEL=openai:gpt-4o-mini")
        return unique

    def router(self, env: Mapping[str, str] | None = None, *, settings: Settings | None = None,
               policy: RetryPolicy | None = None, sleep: Sleep | None = None) -> LLMRouter:
        return LLMRouter(self.chain(env, settings=settings), policy=policy, sleep=sleep)


def _flatten(choice: ModelChoice) -> Iterable[ChatModel | str]:
    if choice is None:
        return
    if isinstance(choice, str):
        for part in choice.split(","):
            if part.strip():
                yield part.strip()
    elif isinstance(choice, LLMRouter):
        yield from choice.models
    elif isinstance(choice, ChatModel):
        yield choice
    else:
        for item in choice:
            yield from _flatten(item)
