"""Model strings: one line of configuration names a provider, a model and, for a chain,
the fallbacks.

    openai:gpt-4o-mini                      OPENAI_API_KEY   (OPENAI_BASE_URL overrides the URL)
    anthropic:claude-sonnet-4-5             ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL)
    openrouter:meta-llama/llama-3.1-70b     OPENROUTER_API_KEY (OPENROUTER_BASE_URL)
    ollama:llama3.2                         no key; OLLAMA_HOST (default http://localhost:11434)
    openai-compatible:http://host:8000/v1#my-model
                                            vLLM, llama.cpp server, LM Studio...; a key only
                                            if the server wants one: OPENAI_COMPATIBLE_API_KEY

``BATON_MODEL`` holds one of these, or several separated by commas: ``"a,b"`` is an
``LLMRouter`` that falls back from ``a`` to ``b``. ``BATON_LLM_TIMEOUT`` (seconds) sets
the request timeout of every model built here. Keys, URLs and the timeout come from a
``baton.settings.Settings`` (the caller's, else ``Settings.from_env(env)``): nothing here
reads the environment.

Decisions: the split is on the FIRST colon, so model ids may contain colons and slashes
(``ollama:qwen2.5:7b``, ``openrouter:anthropic/claude-3.5-sonnet``). Keys are read when
the model is built, never at import. A missing key or malformed string is a
``ConfigurationError`` that says exactly what to set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from baton.errors import ConfigurationError
from baton.llm.base import ChatModel
from baton.settings import Settings

PROVIDERS = ("openai", "anthropic", "openrouter", "ollama", "openai-compatible")
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OLLAMA_DEFAULT_HOST = "http://localhost:11434"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
EXAMPLE = "openai:gpt-4o-mini"


def _timeout(settings: Settings) -> dict[str, float]:
    return {} if settings.llm_timeout_s is None else {"timeout": settings.llm_timeout_s}


def _key(value: str | None, var: str, spec: str) -> str:
    if not value:
        raise ConfigurationError(f"{spec!r} needs an API key: set {var}")
    return value


def ollama_base_url(host: str | None) -> str:
    """The OpenAI-compatible URL of an Ollama server given ``OLLAMA_HOST`` (``host``,
    ``host:port`` or a URL, as Ollama itself accepts)."""
    host = (host or OLLAMA_DEFAULT_HOST).strip().rstrip("/")
    bare = "://" not in host  # like Ollama: a bare host gets port 11434, a URL its scheme's port
    parts = urlsplit("http://" + host if bare else host)
    netloc = parts.netloc + ":11434" if bare and parts.port is None else parts.netloc
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{netloc}{path if path.endswith('/v1') else path + '/v1'}"


def model_from_string(spec: str, *, env: Mapping[str, str] | None = None, settings: Settings | None = None,
                      **options: Any) -> ChatModel:
    """The model a model string names; ``"a,b"`` gives an ``LLMRouter`` over both.
    ``options`` (``timeout``, ``max_tokens``, ``temperature``, ``context_window``) go to
    each provider's constructor. Keys and URLs: ``settings``, else ``Settings.from_env(env)``."""
    settings = settings if settings is not None else Settings.from_env(env)
    parts = [p.strip() for p in (spec or "").split(",") if p.strip()]
    if not parts:
        raise ConfigurationError(f"empty model string: use provider:model, e.g. {EXAMPLE}")
    if len(parts) > 1:
        from baton.llm.router import LLMRouter

        return LLMRouter([model_from_string(p, settings=settings, **options) for p in parts])
    spec = parts[0]
    provider, sep, model = spec.partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    if not sep or not model:
        raise ConfigurationError(
            f"malformed model string {spec!r}: use provider:model with provider one of {', '.join(PROVIDERS)} "
            f"(e.g. {EXAMPLE})"
        )
    builder = _BUILDERS.get(provider)
    if builder is None:
        raise ConfigurationError(f"unknown provider {provider!r} in {spec!r}: use one of {', '.join(PROVIDERS)}")
    return builder(model, spec, settings, {**_timeout(settings), **options})


def model_from_env(env: Mapping[str, str] | None = None, *, settings: Settings | None = None,
                   **options: Any) -> ChatModel | None:
    """The model ``BATON_MODEL`` names (``settings.model``, else ``Settings.from_env(env)``'s),
    or None when it is unset or empty."""
    settings = settings if settings is not None else Settings.from_env(env)
    if not settings.model:
        return None
    return model_from_string(settings.model, settings=settings, **options)


def model_choice(model: str | None, preferred_provider: str | None = None) -> str | None:
    """A model string from a request's preferences (``AgentContext.model`` and
    ``.preferred_provider``): a full model string passes through; a bare model id is
    qualified with the preferred provider (``"qwen2.5:7b"`` + ``"ollama"`` ->
    ``"ollama:qwen2.5:7b"``); no model gives None (the next level decides)."""
    if not model or not model.strip():
        return None
    model = model.strip()
    prefix = model.partition(":")[0].strip().lower()
    if prefix in PROVIDERS or not preferred_provider:
        return model
    return f"{preferred_provider.strip().lower()}:{model}"


def _openai(model: str, spec: str, settings: Settings, options: dict[str, Any]) -> ChatModel:
    from baton.llm.openai_compat import OPENAI_BASE_URL, OpenAICompatible

    return OpenAICompatible(model, provider="openai", api_key=_key(settings.openai_api_key, "OPENAI_API_KEY", spec),
                            base_url=settings.openai_base_url or OPENAI_BASE_URL, **options)


def _openrouter(model: str, spec: str, settings: Settings, options: dict[str, Any]) -> ChatModel:
    from baton.llm.openai_compat import OpenAICompatible

    return OpenAICompatible(model, provider="openrouter", api_key=_key(settings.openrouter_api_key, "OPENROUTER_API_KEY", spec),
                            base_url=settings.openrouter_base_url or OPENROUTER_BASE_URL, **options)


def _ollama(model: str, spec: str, settings: Settings, options: dict[str, Any]) -> ChatModel:
    from baton.llm.openai_compat import OpenAICompatible

    return OpenAICompatible(model, provider="ollama", api_key="ollama", base_url=ollama_base_url(settings.ollama_host),
                            **options)


def _compatible(rest: str, spec: str, settings: Settings, options: dict[str, Any]) -> ChatModel:
    from baton.llm.openai_compat import OpenAICompatible

    base_url, sep, model = rest.rpartition("#")
    if not sep or not base_url.strip() or not model.strip() or "://" not in base_url:
        raise ConfigurationError(
            f"malformed model string {spec!r}: use openai-compatible:<base_url>#<model>, "
            "e.g. openai-compatible:http://localhost:8000/v1#my-model"
        )
    return OpenAICompatible(model.strip(), provider="openai-compatible", base_url=base_url.strip(),
                            api_key=settings.openai_compatible_api_key or "not-needed", **options)


def _anthropic(model: str, spec: str, settings: Settings, options: dict[str, Any]) -> ChatModel:
    from baton.llm.anthropic_provider import Anthropic

    return Anthropic(model, api_key=_key(settings.anthropic_api_key, "ANTHROPIC_API_KEY", spec),
                     base_url=settings.anthropic_base_url or ANTHROPIC_BASE_URL, **options)


_BUILDERS: dict[str, Callable[[str, str, Settings, dict[str, Any]], ChatModel]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "openrouter": _openrouter,
    "ollama": _ollama,
    "openai-compatible": _compatible,
}
