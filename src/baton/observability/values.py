"""What an event may put in a log line or a span attribute: content filtering, coercion."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from baton.settings import Settings

CONTENT_FIELDS = frozenset({"question", "arguments", "sql", "delta"})
"""Event fields that may hold users' words or data: exported only with content capture on."""

MAX_ATTRIBUTE_CHARS = 4096


def truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def capture_content(settings: Settings) -> bool:
    """``BATON_OTEL_CAPTURE_CONTENT`` or the GenAI convention's
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``; off unless one says true."""
    return settings.otel_capture_content or settings.otel_genai_capture_content


def capture_content_from_env(env: Mapping[str, str] | None = None) -> bool:
    """``capture_content(Settings.from_env(env))``: for a tracker built without being told."""
    return capture_content(Settings.from_env(env))


def without_content(data: Mapping[str, Any], capture: bool) -> dict[str, Any]:
    return dict(data) if capture else {k: v for k, v in data.items() if k not in CONTENT_FIELDS}


def attribute(value: Any) -> Any:
    """A value OpenTelemetry accepts: a primitive, or a list of strings; anything else as JSON."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value[:MAX_ATTRIBUTE_CHARS]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return [v[:MAX_ATTRIBUTE_CHARS] for v in value]
    return json.dumps(value, default=str, sort_keys=True)[:MAX_ATTRIBUTE_CHARS]


def nanoseconds(ts: float) -> int:
    return int(ts * 1_000_000_000)
