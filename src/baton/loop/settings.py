"""The knobs of the tool-calling loop (seed 002 "The tool-calling loop, in full").

The ratios are fractions of the model's context window and their defaults are the seed's
numbers: wrap up at ~70 %, trim in the loop at ~80 %, compress to 60 % after the provider
reports an overflow. Settings are frozen and shared freely between requests; use
``dataclasses.replace`` for a variant (``stream=True`` for one request, say).
"""

from __future__ import annotations

from dataclasses import dataclass

from baton.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """How far the loop may go and when it starts defending the context window.

    - ``max_iterations``: LLM calls charged to the guard; a refunded call is not charged.
    - ``wrap_up_ratio``: at this share of the window one "compose your final answer now"
      system message is added (once).
    - ``trim_ratio``: above this share the oldest history is dropped before the next call.
    - ``compress_ratio``: after a context-length error the conversation is cut to this share
      and the call is retried once.
    - ``max_refunds``: how many recoverable provider errors are forgiven before the loop
      gives up and raises the last one.
    - ``stream``: call ``model.stream()`` and emit an ``llm.token`` event per text delta.
    - ``refund_backoff_s``: wait before retrying a refunded call whose error names no
      Retry-After, doubled per refund. A single configured provider has no router in front
      of it (and its SDK's retries are off), so without this a 500 would be re-sent at once.
    """

    max_iterations: int = 10
    wrap_up_ratio: float = 0.70
    trim_ratio: float = 0.80
    compress_ratio: float = 0.60
    max_refunds: int = 3
    stream: bool = False
    refund_backoff_s: float = 0.5

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ConfigurationError(f"LoopSettings.max_iterations must be at least 1, got {self.max_iterations}")
        if self.max_refunds < 0:
            raise ConfigurationError(f"LoopSettings.max_refunds must be 0 or more, got {self.max_refunds}")
        if not self.refund_backoff_s >= 0:
            raise ConfigurationError(f"LoopSettings.refund_backoff_s must be 0 or more, got {self.refund_backoff_s}")
        for name in ("wrap_up_ratio", "trim_ratio", "compress_ratio"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ConfigurationError(f"LoopSettings.{name} must be in (0, 1], got {value}")
        if self.compress_ratio > self.trim_ratio:
            raise ConfigurationError(
                f"LoopSettings.compress_ratio ({self.compress_ratio}) must not exceed trim_ratio ({self.trim_ratio}): "
                "compression after an overflow has to cut deeper than routine trimming"
            )


DEFAULT_SETTINGS = LoopSettings()
