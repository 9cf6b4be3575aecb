"""Context windows, resolved at one boundary (seed 002 "Context Window Sizes").

There is deliberately no table of model ids here. ``ContextWindowResolver`` answers, in
this order:

1. **Configuration**: the model's own ``context_window`` attribute (set on the provider),
   then an explicit per-model entry: the ``windows`` given to the resolver, or
   ``BATON_CONTEXT_WINDOWS="gpt-4o-mini=128000,ollama:llama3.2=8192"``. A key is a bare
   model id or ``provider:model``; ``provider:model`` wins when both match. This outranks
   everything: it is how an operator sets a budget below the real window.
2. **The provider's metadata**: ``await model.list_context_windows()`` (OpenAI-compatible
   ``GET /models``: OpenRouter, vLLM, LM Studio, llama.cpp fields; Anthropic's Models API
   ``max_input_tokens``). Fetched once per process per endpoint (providers sharing an
   endpoint share one fetch; concurrent first calls wait for the same fetch), cached for
   ``ttl`` seconds; a model missing from a cached list triggers a refetch if the list is
   older than ``miss_refresh_after`` seconds (a model deployed since). A failed fetch is
   logged and retried after ``miss_refresh_after``, never raised: the floor covers it.
3. **A conservative floor** (8192 tokens), with a WARNING naming the model, once per
   model per resolver, so a new model never runs on the floor unnoticed.

An ``LLMRouter`` gets the SMALLEST window of its entries: a fallback may answer any turn,
and the prompt must fit whichever does.

Use ``default_resolver()`` for the process-wide instance (created on first use, reading
the environment then) or build your own (tests, several configurations).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from baton.errors import ConfigurationError
from baton.llm.base import ChatModel
from baton.settings import Settings, parse_windows

__all__ = ["ENV_VAR", "ContextWindowResolver", "context_window", "default_resolver", "parse_windows"]

log = logging.getLogger(__name__)

DEFAULT_FLOOR = 8192
DEFAULT_TTL = 3600.0
DEFAULT_MISS_REFRESH_AFTER = 60.0
ENV_VAR = "BATON_CONTEXT_WINDOWS"


@dataclass(slots=True)
class _Fetched:
    at: float
    windows: dict[str, int]
    ok: bool


class ContextWindowResolver:
    """Resolves ``await resolver.context_window(model)`` in the order above."""

    def __init__(
        self,
        windows: Mapping[str, int] | str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        settings: Settings | None = None,
        floor: int = DEFAULT_FLOOR,
        ttl: float = DEFAULT_TTL,
        miss_refresh_after: float = DEFAULT_MISS_REFRESH_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        settings = settings if settings is not None else Settings.from_env(env)
        configured = dict(settings.context_windows)
        if isinstance(windows, str):
            configured.update(parse_windows(windows, source="windows"))
        elif windows:
            for key, value in windows.items():
                if not isinstance(value, int) or value <= 0:
                    raise ConfigurationError(f"context window for {key!r} must be a positive int, got {value!r}")
                configured[key] = value
        self.configured: dict[str, int] = configured
        self.floor = floor
        self.ttl = ttl
        self.miss_refresh_after = miss_refresh_after
        self._clock = clock
        self._cache: dict[str, _Fetched] = {}
        self._inflight: dict[str, asyncio.Task[_Fetched]] = {}
        self._warned: set[str] = set()
        self.fetch_count = 0  # metadata fetches started (visible for tests and diagnostics)

    async def context_window(self, model: ChatModel) -> int:
        """The window, in tokens, for prompts sent to ``model``."""
        entries = getattr(model, "models", None)
        if isinstance(entries, tuple) and entries:  # an LLMRouter: the smallest of its chain
            return min(await asyncio.gather(*(self.context_window(m) for m in entries)))
        configured = self.configured_window(model)
        if configured is not None:
            return configured
        provided = await self.provider_window(model)
        if provided is not None:
            return provided
        label = f"{model.provider}:{model.model}"
        if label not in self._warned:
            self._warned.add(label)
            log.warning(
                "context window of %s is unknown (not configured, not in the provider's model list); "
                "using the floor of %d tokens. Set %s=\"%s=<tokens>\" to use its real window.",
                label, self.floor, ENV_VAR, model.model,
            )
        return self.floor

    def configured_window(self, model: ChatModel) -> int | None:
        own = getattr(model, "context_window", None)
        if isinstance(own, int) and own > 0:
            return own
        return self.configured.get(f"{model.provider}:{model.model}") or self.configured.get(model.model)

    async def provider_window(self, model: ChatModel) -> int | None:
        """The window the provider reports, from the cache or a (shared) fetch."""
        key = getattr(model, "metadata_key", None)
        if not key or not hasattr(model, "list_context_windows"):
            return None
        fetched = await self._fetched(key, model, refresh=False)
        if model.model not in fetched.windows and self._clock() - fetched.at >= self.miss_refresh_after:
            fetched = await self._fetched(key, model, refresh=True)
        return fetched.windows.get(model.model)

    def invalidate(self, key: str | None = None) -> None:
        """Forget cached metadata for one endpoint key, or all of them."""
        if key is None:
            self._cache.clear()
        else:
            self._cache.pop(key, None)

    async def _fetched(self, key: str, model: ChatModel, *, refresh: bool) -> _Fetched:
        cached = self._cache.get(key)
        if cached is not None and not refresh:
            lifetime = self.ttl if cached.ok else self.miss_refresh_after
            if self._clock() - cached.at < lifetime:
                return cached
        loop = asyncio.get_running_loop()
        task = self._inflight.get(key)
        if task is None or task.done() or task.get_loop() is not loop:
            task = loop.create_task(self._fetch(key, model))
            self._inflight[key] = task
        return await asyncio.shield(task)

    async def _fetch(self, key: str, model: ChatModel) -> _Fetched:
        self.fetch_count += 1
        try:
            windows = dict(await model.list_context_windows())  # type: ignore[attr-defined]
            fetched = _Fetched(self._clock(), windows, True)
        except Exception as exc:  # metadata is an optimisation: the floor covers a failure
            log.warning("could not read model metadata from %s (%s: %s); retrying in %.0fs",
                        key, type(exc).__name__, exc, self.miss_refresh_after)
            fetched = _Fetched(self._clock(), {}, False)
        self._cache[key] = fetched
        return fetched


_default: ContextWindowResolver | None = None


def default_resolver() -> ContextWindowResolver:
    """The process-wide resolver, created on first use from the environment."""
    global _default
    if _default is None:
        _default = ContextWindowResolver()
    return _default


async def context_window(model: ChatModel) -> int:
    """Shorthand for ``await default_resolver().context_window(model)``."""
    return await default_resolver().context_window(model)
