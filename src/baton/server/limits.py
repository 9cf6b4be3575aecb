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
| ``BATON_MAX_IN_FLIGHT`` | 20,000 | hard cap: units of work in flight in one process (a question 1, an open stream 2: ``admission.py``); beyond: 503 + ``Retry-After`` |
| ``BATON_ADMISSION_MEMORY`` | 1 GiB | memory for work in flight: the cap is also this over the measured bytes per unit in flight |
| ``BATON_ADMISSION_MAX_BUSY`` | 0.9 | busy share (the event loop's thread, and the threads sharing its interpreter lock: ``headroom.busy_share``) over which the CPU is saturated |
| ``BATON_ADMISSION_MAX_LAG`` | 0.025 s | event-loop lag (beyond how late the machine wakes an idle thread) over which the CPU is saturated: a question spans about ten turns of the loop, so 25 ms keeps CPU-bound answers near 250 ms |
| ``BATON_ADMISSION_MAX_DELAY`` | 0.075 s | the delay the process may add to an answer beyond its model's and stores' time (or 5 % of that time), at the p90 of the last half second's answers, over which the CPU is saturated (``delays.py``) |
| ``BATON_HEADER_TIMEOUT`` | 10 s | a request's headers must arrive within this of its first byte (of the connection's opening): else 408 and closed (``connections.py``) |
| ``BATON_MAX_CONNECTIONS`` | cap + 25 % | open connections per process (within the open-files limit); beyond: 503 + ``Retry-After``, closed |

``BATON_ADMISSION_QUEUE`` and ``BATON_ADMISSION_WAIT`` (a fixed count and its queue) are gone:
admission follows the process's headroom; setting them is refused by name (``baton.settings.REMOVED``).
The variables are read by ``baton.settings.Settings``; ``Limits.from_settings`` takes them from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from baton.settings import Settings


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20
    max_chat_body_bytes: int = 4 << 20
    max_chart_body_bytes: int = 6_000_000
    body_timeout_s: float = 30.0
    max_json_depth: int = 64
    max_in_flight: int = 20_000
    admission_memory_bytes: int = 1 << 30
    admission_max_busy: float = 0.9
    admission_max_lag_s: float = 0.025
    admission_max_delay_s: float = 0.075  # the own delay an answer may bear (``delays.py``: or 5 % of its dependencies' time)
    header_timeout_s: float = 10.0
    max_connections: int = 0  # 0: the cap and a quarter (connections.connection_limit)

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """The limits ``settings`` (``BATON_MAX_*``, ``BATON_ADMISSION_*`` ...) set."""
        values = {spec.name: getattr(settings, spec.name) for spec in fields(cls)}
        values["max_connections"] = values["max_connections"] or 0
        return cls(**values)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        """``from_settings(Settings.from_env(env))``."""
        return cls.from_settings(Settings.from_env(env))
