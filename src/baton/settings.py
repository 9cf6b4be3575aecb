"""Every environment variable Baton reads, typed, in one place: ``Settings.from_env()``.

Why: a variable read deep in the library is configuration nobody can list, test or pass
explicitly. Here each one is a field (its variable, type, default and meaning in the field's
metadata: ``docs/reference/settings.md`` is that table, and a test keeps the two equal). The
CLI and the server build a ``Settings`` once at start-up and hand its values to the library;
library entry points that take nothing (``model_from_env()``, ``State.from_env()``) call
``Settings.from_env()`` themselves. This module is the only one outside ``baton.cli`` and
``baton.server`` that reads ``os.environ`` (a test walks the sources).

Decisions:

- An empty variable is an unset one (as every reader did before).
- A malformed value is a ``ConfigurationError`` naming the variable, raised by ``from_env``:
  a process refuses to start on it rather than falling back silently.
- Flags (``BATON_OTEL_CONSOLE`` ...) take 1/true/yes/on or 0/false/no/off; the OpenTelemetry
  variables keep that standard's reading (true or not) since other tools read them too.
- Provider SDK variables (``OPENAI_API_KEY``, ``OLLAMA_HOST`` ...) and the OpenTelemetry ones
  Baton itself looks at are listed too: they are configuration of a Baton process as much.
- ``INTERNAL`` names the variables Baton sets for its own worker processes, ``REMOVED`` the
  retired ones (setting one is refused by name).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from baton.errors import ConfigurationError

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})
TRANSPORTS = ("aiohttp", "httpx")
DEFAULT_HOME = "~/.baton"

REMOVED: Mapping[str, str] = MappingProxyType({
    "BATON_ADMISSION_QUEUE": "admission follows the process's headroom (BATON_MAX_IN_FLIGHT is a hard cap, "
                             "BATON_ADMISSION_MAX_LAG / _MAX_BUSY its bounds); unset it",
    "BATON_ADMISSION_WAIT": "admission follows the process's headroom (BATON_MAX_IN_FLIGHT is a hard cap, "
                            "BATON_ADMISSION_MAX_LAG / _MAX_BUSY its bounds); unset it",
})
"""Variables no longer used: ``from_env`` refuses a set one, saying what replaced it."""

INTERNAL: Mapping[str, str] = MappingProxyType({
    "BATON_SERVE_CONFIG": "set by `baton serve --workers N` for its worker processes: the served workspace (JSON)",
    "BATON_SERVED_FACTORY": "set by `baton serve --workers N`: the app factory each worker process builds",
    "BATON_SERVED_LOG_LEVEL": "set by `baton serve --workers N`: the log level of each worker process",
})
"""Variables Baton sets for its own child processes; never set by hand, never a ``Settings`` field."""


# --- parsers: (raw text, variable name) -> value; raw is never empty ---------------------------


def _text(raw: str, name: str) -> str:
    return raw.strip()


def _seconds(raw: str, name: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0 or math.isinf(value):
        raise ConfigurationError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


def _number(raw: str, name: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number, got {raw!r}") from None
    if not value > 0:
        raise ConfigurationError(f"{name} must be positive, got {raw!r}")
    return value


def _count(raw: str, name: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a whole number, got {raw!r}") from None
    if value <= 0:
        raise ConfigurationError(f"{name} must be positive, got {raw!r}")
    return value


def _flag(raw: str, name: str) -> bool:
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ConfigurationError(f"{name} must be one of 1, true, yes, on, 0, false, no, off, got {raw!r}")


def _set(raw: str, name: str) -> bool:
    return True  # any non-empty value


def _standard_true(raw: str, name: str) -> bool:
    return raw.strip().lower() in TRUE  # OpenTelemetry's reading: anything else is false


def _path(raw: str, name: str) -> Path:
    return Path(raw).expanduser()


def _transport(raw: str, name: str) -> str:
    value = raw.strip().lower()
    if value not in TRANSPORTS:
        raise ConfigurationError(f"{name} must be one of {', '.join(TRANSPORTS)}, not {value!r}")
    return value


def parse_windows(text: str, *, source: str = "BATON_CONTEXT_WINDOWS") -> Mapping[str, int]:
    """``"model=tokens,provider:model=tokens"`` as a mapping; ``ConfigurationError`` if malformed."""
    windows: dict[str, int] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.rpartition("=")
        try:
            tokens = int(value.strip().replace("_", ""))
        except ValueError:
            tokens = 0
        if not sep or not key.strip() or tokens <= 0:
            raise ConfigurationError(
                f"malformed {source} entry {item!r}: use model=tokens, e.g. {source}=\"gpt-4o-mini=128000\""
            )
        windows[key.strip()] = tokens
    return MappingProxyType(windows)


def _windows(raw: str, name: str) -> Mapping[str, int]:
    return parse_windows(raw, source=name)


def _var(variable: str, kind: str, doc: str, parse: Callable[[str, str], Any] = _text, default: Any = None,
         shown: str | None = None) -> Any:
    """A field read from ``variable``; ``kind`` and ``shown`` (the default, for people) are the docs row."""
    if shown is None:
        shown = "unset" if default is None else ("on" if default else "off") if isinstance(default, bool) else str(default)
    meta = {"variable": variable, "kind": kind, "doc": doc, "parse": parse, "shown": shown}
    private = kind == "secret" or "URL" in kind or variable == "BATON_API_KEYS"  # no secret in a repr or a log line
    if isinstance(default, Mapping):
        frozen = MappingProxyType(dict(default))
        return field(default_factory=lambda: frozen, metadata=meta, repr=not private)
    return field(default=default, metadata=meta, repr=not private)


@dataclass(frozen=True)
class Settings:
    """A Baton process's configuration from its environment (module docstring). Build it once
    at start-up (``Settings.from_env()``); ``Settings()`` is every default."""

    # models
    model: str | None = _var("BATON_MODEL", "model string", "the model, e.g. openai:gpt-4o-mini; a,b falls back from a to b")
    llm_timeout_s: float | None = _var("BATON_LLM_TIMEOUT", "seconds", "timeout of one model call", _seconds, shown="30")
    llm_attempts: int = _var("BATON_LLM_ATTEMPTS", "whole number", "tries per model before falling back", _count, 3)
    question_deadline_s: float = _var("BATON_QUESTION_DEADLINE", "seconds", "deadline of one question", _seconds, 120.0,
                                      "120")
    llm_transport: str = _var("BATON_LLM_TRANSPORT", "aiohttp or httpx", "HTTP transport of the provider SDKs",
                              _transport, "aiohttp")
    context_windows: Mapping[str, int] = _var("BATON_CONTEXT_WINDOWS", "model=tokens list",
                                              "context windows of models, e.g. gpt-4o-mini=128000", _windows, {}, "none")
    model_prices: str | None = _var("BATON_MODEL_PRICES", "model=IN/OUT list",
                                    "USD per million input/output tokens per model, for `baton eval`")
    openai_api_key: str | None = _var("OPENAI_API_KEY", "secret", "key of openai: models (and OpenAI embeddings)")
    openai_base_url: str | None = _var("OPENAI_BASE_URL", "URL", "another URL for openai: models", shown="OpenAI's")
    anthropic_api_key: str | None = _var("ANTHROPIC_API_KEY", "secret", "key of anthropic: models")
    anthropic_base_url: str | None = _var("ANTHROPIC_BASE_URL", "URL", "another URL for anthropic: models",
                                          shown="Anthropic's")
    openrouter_api_key: str | None = _var("OPENROUTER_API_KEY", "secret", "key of openrouter: models")
    openrouter_base_url: str | None = _var("OPENROUTER_BASE_URL", "URL", "another URL for openrouter: models",
                                           shown="OpenRouter's")
    ollama_host: str | None = _var("OLLAMA_HOST", "host, host:port or URL", "the Ollama server of ollama: models",
                                   shown="localhost:11434")
    openai_compatible_api_key: str | None = _var("OPENAI_COMPATIBLE_API_KEY", "secret",
                                                 "key of openai-compatible: servers that want one")
    # state
    home: Path = _var("BATON_HOME", "path", "folder of the embedded state (SQLite files) and caches", _path,
                      Path(DEFAULT_HOME), DEFAULT_HOME)
    state_url: str | None = _var("BATON_STATE_URL", "PostgreSQL URL", "the shared state of every process (unset: files in BATON_HOME)")
    memory_url: str | None = _var("BATON_MEMORY_URL", "database URL", "the memory journal `baton memory` reads")
    events_url: str | None = _var("BATON_EVENTS_URL", "PostgreSQL or Redis URL", "live events across processes (unset: the state's)")
    state_connect_timeout_s: float = _var("BATON_STATE_CONNECT_TIMEOUT", "seconds", "connect timeout of a PostgreSQL state",
                                          _seconds, 5.0)
    state_statement_timeout_s: float = _var("BATON_STATE_STATEMENT_TIMEOUT", "seconds",
                                            "statement timeout of a PostgreSQL state", _seconds, 15.0)
    # pipelines
    pipeline_database_url: str | None = _var("BATON_PIPELINE_DATABASE_URL", "database URL",
                                             "DBOS system database (unset: the state's)")
    pipeline_queue: str | None = _var("BATON_PIPELINE_QUEUE", "text", "queue of durable pipeline stages", shown="baton-pipelines")
    pipeline_runner: str | None = _var("BATON_PIPELINE_RUNNER", "module:function", "stage runner factory of a worker")
    pipeline_executor_id: str | None = _var("BATON_PIPELINE_EXECUTOR_ID", "text", "this worker's executor id",
                                            shown="host-pid-random")
    # server
    api_keys: str | None = _var("BATON_API_KEYS", "key=workspace list", "the only API keys a server accepts (unset: the key store)")
    forwarded_allow_ips: str | None = _var("BATON_FORWARDED_ALLOW_IPS", "IP list", "proxies trusted for X-Forwarded-* headers")
    demo_key: str | None = _var("BATON_DEMO_KEY", "secret", "the demo's API key", shown="a stored random key")
    demo_smoke: bool = _var("BATON_DEMO_SMOKE", "any value", "`baton demo` checks and exits, never serves", _set, False)
    max_body_bytes: int = _var("BATON_MAX_BODY_BYTES", "bytes", "largest request body", _count, 1 << 20, "1 MiB")
    max_chat_body_bytes: int = _var("BATON_MAX_CHAT_BODY_BYTES", "bytes", "largest /v1/chat/completions body", _count, 4 << 20,
                                   "4 MiB")
    max_chart_body_bytes: int = _var("BATON_MAX_CHART_BODY_BYTES", "bytes", "largest /v1/charts/render body", _count, 6_000_000,
                                    "6 MB")
    body_timeout_s: float = _var("BATON_BODY_TIMEOUT", "seconds", "a whole request body arrives within this", _number, 30.0)
    max_json_depth: int = _var("BATON_MAX_JSON_DEPTH", "whole number", "nesting of any JSON body", _count, 64)
    max_in_flight: int = _var("BATON_MAX_IN_FLIGHT", "whole number", "hard cap of units of work in flight per process",
                              _count, 20_000, "20000")
    admission_memory_bytes: int = _var("BATON_ADMISSION_MEMORY", "bytes", "memory for work in flight", _count, 1 << 30,
                                       "1 GiB")
    admission_max_busy: float = _var("BATON_ADMISSION_MAX_BUSY", "share", "busy share over which the CPU is saturated",
                                     _number, 0.9)
    admission_max_lag_s: float = _var("BATON_ADMISSION_MAX_LAG", "seconds", "event-loop lag over which the CPU is saturated",
                                      _number, 0.025)
    admission_max_delay_s: float = _var("BATON_ADMISSION_MAX_DELAY", "seconds",
                                        "own delay of an answer (p90) over which the CPU is saturated", _number, 0.075)
    header_timeout_s: float = _var("BATON_HEADER_TIMEOUT", "seconds", "a request's headers arrive within this", _number, 10.0)
    max_connections: int | None = _var("BATON_MAX_CONNECTIONS", "whole number", "open connections per process", _count,
                                       shown="the in-flight cap + 25 %")
    # safety, charts
    unsafe_allow_privileged_role: bool = _var("BATON_UNSAFE_ALLOW_PRIVILEGED_ROLE", "flag",
                                              "run model-written SQL as a privileged role (the CLI's opt-in)", _flag, False)
    chart_workers: int = _var("BATON_CHART_WORKERS", "whole number", "chart render processes per process", _count, 2)
    # observability
    otel_console: bool = _var("BATON_OTEL_CONSOLE", "flag", "print spans to stdout", _flag, False)
    otel_capture_content: bool = _var("BATON_OTEL_CAPTURE_CONTENT", "flag",
                                      "questions, SQL and arguments in spans and log lines", _flag, False)
    otel_genai_capture_content: bool = _var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true or not",
                                            "the GenAI convention's content capture (as BATON_OTEL_CAPTURE_CONTENT)",
                                            _standard_true, False)
    otel_sdk_disabled: bool = _var("OTEL_SDK_DISABLED", "true or not", "no spans: JSON log lines", _standard_true, False)
    otel_traces_exporter: str | None = _var("OTEL_TRACES_EXPORTER", "list", "console, otlp or none")
    otel_endpoint: str | None = _var("OTEL_EXPORTER_OTLP_ENDPOINT", "URL", "OTLP collector (spans exported there)")
    otel_traces_endpoint: str | None = _var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "URL", "OTLP collector of traces")
    otel_protocol: str | None = _var("OTEL_EXPORTER_OTLP_PROTOCOL", "text", "http/protobuf or grpc", shown="http/protobuf")
    otel_traces_protocol: str | None = _var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "text", "the protocol for traces",
                                            shown="OTEL_EXPORTER_OTLP_PROTOCOL")
    otel_service_name: str | None = _var("OTEL_SERVICE_NAME", "text", "service name of the spans", shown="baton")

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", Path(self.home).expanduser())

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings ``env`` (default: this process's environment) asks for;
        ``ConfigurationError`` naming the variable for a malformed or retired one."""
        env = dict(os.environ) if env is None else env  # one copy: cheaper than os.environ's per-key decoding
        for gone, instead in REMOVED.items():
            if (env.get(gone) or "").strip():
                raise ConfigurationError(f"{gone} is no longer used: {instead}")
        values: dict[str, Any] = {}
        for name, variable, parse in _READERS:
            raw = env.get(variable)
            if raw is not None and raw.strip():
                values[name] = parse(raw, variable)
        return cls(**values)

    @classmethod
    def variables(cls) -> tuple[str, ...]:
        """Every variable a field reads, in order."""
        return tuple(spec.metadata["variable"] for spec in fields(cls))


_READERS = tuple((spec.name, spec.metadata["variable"], spec.metadata["parse"]) for spec in fields(Settings))


def rows() -> Iterator[tuple[str, str, str, str]]:
    """(variable, type, default, meaning) of every field: the table of the docs page."""
    for spec in fields(Settings):
        meta = spec.metadata
        assert spec.default is not MISSING or spec.default_factory is not MISSING
        yield meta["variable"], meta["kind"], meta["shown"], meta["doc"]


def markdown_table() -> str:
    """The docs page's table (``docs/reference/settings.md``; a test compares them)."""
    lines = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{variable}` | {kind} | {shown} | {doc} |" for variable, kind, shown, doc in rows()]
    return "\n".join(lines)
