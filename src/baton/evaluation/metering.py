"""What each question cost: LLM calls, tokens and dollars, counted at the model itself.

The answer path calls models in several places (the orchestrator's loop, a SQL specialist's
own calls, the planner, memory's deep analysis), and only some of them emit events, so
counting events would undercount. Instead the model the workspace is built with is wrapped
(``Meter.wrap``): every ``complete``/``stream`` call is counted, with the usage the provider
reported, into the question being answered. Which question that is comes from a context
variable set around each question (``Meter.question``): asyncio tasks and threads started
while answering inherit it, so concurrent questions never mix their counts.

Dollars: providers report tokens, not prices, so prices are configuration (``Prices``):
``--price IN,OUT`` (USD per million input and output tokens, for every model) or
``BATON_MODEL_PRICES="gpt-4o-mini=0.15/0.6,claude-sonnet-4-5=3/15"`` (per model, matched on
``provider:model`` then ``model``). A call to a model without a price has an unknown cost:
counted in ``unpriced_calls``, never guessed.

Decisions (the issue was silent):
- A call counts when it is made, also when it fails: it was an attempt, and most providers
  bill a failed stream's tokens. Retries and fallbacks inside an ``LLMRouter`` are one call
  here (the router is what the workspace calls).
- ``LexicalRouter`` and the verified-question route are not LLMs and are never wrapped:
  with no model configured nothing is counted, truthfully zero calls.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from baton.errors import ConfigurationError
from baton.llm.base import is_language_model
from baton.settings import Settings

ENV_PRICES = "BATON_MODEL_PRICES"


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million input tokens and per million output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Mapping[str, Any]) -> float:
        tokens_in = int(usage.get("input_tokens") or 0)
        tokens_out = int(usage.get("output_tokens") or 0)
        return (tokens_in * self.input_per_mtok + tokens_out * self.output_per_mtok) / 1_000_000


def _price(text: str, where: str) -> Price:
    parts = text.replace("/", ",").split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 2 or any(v < 0 for v in values):
        raise ConfigurationError(f"{where}: a price is 'IN,OUT' (USD per million input, output tokens), not {text!r}")
    return Price(values[0], values[1])


class Prices:
    """Model prices (module docstring). ``default`` applies to every model without its own."""

    def __init__(self, default: Price | None = None, per_model: Mapping[str, Price] | None = None) -> None:
        self.default = default
        self.per_model = dict(per_model or {})

    @classmethod
    def parse(cls, default: str | None = None, per_model: str | None = None) -> Prices:
        """``default``: ``"IN,OUT"``; ``per_model``: ``"model=IN/OUT,other=IN/OUT"``."""
        table: dict[str, Price] = {}
        for entry in (per_model or "").split(","):
            if not entry.strip():
                continue
            name, sep, value = entry.partition("=")
            if not sep or not name.strip():
                raise ConfigurationError(f"{ENV_PRICES}: expected 'model=IN/OUT', got {entry!r}")
            table[name.strip()] = _price(value.strip(), ENV_PRICES)
        return cls(_price(default, "--price") if default else None, table)

    @classmethod
    def from_env(cls, default: str | None = None, env: Mapping[str, str] | None = None, *,
                 settings: Settings | None = None) -> Prices:
        """``default`` and ``BATON_MODEL_PRICES`` (``settings``, else ``Settings.from_env(env)``)."""
        settings = settings if settings is not None else Settings.from_env(env)
        return cls.parse(default, settings.model_prices)

    def price_for(self, provider: str, model: str) -> Price | None:
        return self.per_model.get(f"{provider}:{model}") or self.per_model.get(model) or self.default

    @property
    def empty(self) -> bool:
        return self.default is None and not self.per_model


@dataclass(slots=True)
class Usage:
    """What one question (or the whole run) spent."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    models: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {"llm_calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "tokens": self.tokens, "cost_usd": round(self.cost_usd, 8), "unpriced_calls": self.unpriced_calls,
                "models": sorted(self.models)}


_current: ContextVar[Usage | None] = ContextVar("baton_eval_usage", default=None)


class Meter:
    """Counts calls of the models it wrapped, per question and in total (module docstring)."""

    def __init__(self, prices: Prices | None = None) -> None:
        self.prices = prices or Prices()
        self.total = Usage()
        self.unattributed = 0  # calls made outside any question (none expected)
        self._lock = threading.Lock()

    def wrap(self, model: Any) -> Any:
        """``model`` counted by this meter; ``None`` stays ``None``; not-LLMs stay as they are."""
        if not is_language_model(model) or isinstance(model, MeteredModel):
            return model
        return MeteredModel(model, self)

    @contextlib.contextmanager
    def question(self) -> Iterator[Usage]:
        """Count the calls made inside this block (and the tasks it starts) into a fresh ``Usage``."""
        usage = Usage()
        token = _current.set(usage)
        try:
            yield usage
        finally:
            _current.reset(token)

    def _started(self) -> None:
        with self._lock:
            self.total.calls += 1
            current = _current.get()
            if current is None:
                self.unattributed += 1
            else:
                current.calls += 1

    def _finished(self, provider: str, model: str, usage: Mapping[str, Any] | None) -> None:
        usage = usage or {}
        price = self.prices.price_for(provider, model)
        cost = price.cost(usage) if price is not None else None
        label = f"{provider}:{model}"
        with self._lock:
            for target in (self.total, _current.get()):
                if target is None:
                    continue
                target.input_tokens += int(usage.get("input_tokens") or 0)
                target.output_tokens += int(usage.get("output_tokens") or 0)
                target.models.add(label)
                if cost is None:
                    target.unpriced_calls += 1
                else:
                    target.cost_usd += cost


class MeteredModel:
    """A ``ChatModel`` that counts every call of the model it wraps; anything else (context
    window, the router's chain, ``is_llm``) is the wrapped model's."""

    def __init__(self, inner: Any, meter: Meter) -> None:
        self._inner = inner
        self._meter = meter

    @property
    def provider(self) -> str:
        return self._inner.provider

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def inner(self) -> Any:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None):
        self._meter._started()
        response = await self._inner.complete(messages, tools, temperature=temperature, max_tokens=max_tokens)
        self._meter._finished(response.provider or self.provider, response.model or self.model, response.usage)
        return response

    async def stream(self, messages, tools=None, *, temperature=None, max_tokens=None) -> AsyncIterator[Any]:
        self._meter._started()
        async for chunk in self._inner.stream(messages, tools, temperature=temperature, max_tokens=max_tokens):
            response = getattr(chunk, "response", None)
            if response is not None:
                self._meter._finished(response.provider or self.provider, response.model or self.model, response.usage)
            yield chunk

    def __repr__(self) -> str:
        return f"MeteredModel({self._inner!r})"
