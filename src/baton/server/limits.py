"""The HTTP surface's limits, in one place, from the environment (read when the app is built).

A question is at most ``schemas.MAX_QUESTION_CHARS`` (20,000) characters on every route
(ask, stream, chat completions, pipelines, checkpoint edits).

| setting | default | what |
|---|---|---|
| ``BATON_MAX_BODY_BYTES`` | 1 MiB | any request body |
| ``BATON_MAX_CHAT_BODY_BYTES`` | 4 MiB | ``/v1/chat/completions`` (a chat client sends its history) |
| ``BATON_MAX_CHART_BODY_BYTES`` | 6 MB | ``/v1/charts/render`` (specs up to ``MAX_CHART_SPEC_BYTES``) |
| ``BATON_BODY_TIMEOUT`` | 30 s | the whole body must arrive within this |
| ``BATON_MAX_JSON_DEPTH`` | 64 | nesting of any JSON body |
| ``BATON_MAX_IN_FLIGHT`` | 48 | questions answered at once by one process (``admission.py``: why 48) |
| ``BATON_ADMISSION_QUEUE`` | 0 | questions waiting for a slot; beyond: 503 + ``Retry-After`` |
| ``BATON_ADMISSION_WAIT`` | 0.25 s | longest wait for a slot (with a queue) |
| ``BATON_ADMISSION_MAX_BUSY`` | 0.85 | busy share (the event loop's thread, and the threads sharing its interpreter lock: ``admission.busy_share``) over which new questions are refused (CPU saturated) |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from baton.errors import ConfigurationError


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20
    max_chat_body_bytes: int = 4 << 20
    max_chart_body_bytes: int = 6_000_000
    body_timeout_s: float = 30.0
    max_json_depth: int = 64
    max_in_flight: int = 48
    admission_queue: int = 0
    admission_wait_s: float = 0.25
    admission_max_busy: float = 0.85

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        env = os.environ if env is None else env
        names = {
            "max_body_bytes": "BATON_MAX_BODY_BYTES",
            "max_chat_body_bytes": "BATON_MAX_CHAT_BODY_BYTES", "max_chart_body_bytes": "BATON_MAX_CHART_BODY_BYTES",
            "body_timeout_s": "BATON_BODY_TIMEOUT", "max_json_depth": "BATON_MAX_JSON_DEPTH",
            "max_in_flight": "BATON_MAX_IN_FLIGHT",
            "admission_queue": "BATON_ADMISSION_QUEUE", "admission_wait_s": "BATON_ADMISSION_WAIT",
            "admission_max_busy": "BATON_ADMISSION_MAX_BUSY",
        }
        values: dict[str, float | int] = {}
        for field in fields(cls):
            raw = (env.get(names[field.name]) or "").strip()
            if not raw:
                continue
            kind = float if field.name.endswith(("_s", "_busy")) else int
            try:
                value = kind(raw)
            except ValueError:
                raise ConfigurationError(f"{names[field.name]} must be a {'number' if kind is float else 'whole number'}, got {raw!r}") from None
            if value < 0 or (value == 0 and field.name != "admission_queue"):
                raise ConfigurationError(f"{names[field.name]} must be positive, got {raw!r}")
            values[field.name] = value
        return cls(**values)  # type: ignore[arg-type]
