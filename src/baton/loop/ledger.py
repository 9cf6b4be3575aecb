"""The conversation with a running token count: the loop's view of context pressure.

Estimating the whole history on every iteration is what makes naive loops slow (each
message re-encoded N times over N iterations). The ledger counts a message once, when it
is appended, and keeps the counts parallel to the messages; after trimming it keeps the
counts of the survivors instead of re-encoding them. Checking the pressure is then O(1).

Counting is lazy: a message is counted when the size is first needed after it was
appended (the next pressure check), so a loop that stops right after its tools ran (the
orchestrator's early exit) never encodes the tool results it will not send.

Estimates are corrected by what the provider says, in one direction only. The size the
loop believes is ``(sum of message counts + tool schema tokens) * scale``:

- when a response reports ``usage["input_tokens"]``, ``scale`` becomes reported / estimated
  for that prompt (a provider whose tokenizer counts more than cl100k);
- when the provider rejects a prompt as too long, the real size was at least the window,
  so ``scale`` rises to at least window / estimated.

``scale`` never goes below 1: a provider that counts fewer tokens than we do (or reports
cache reads separately, as Anthropic does) leaves our estimate in charge. Seed 002 asks
for exactly this bias: being early to compact costs one avoidable rung, being late costs
the request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from baton.llm.tokens import message_tokens
from baton.messages import Message, Tool

TOOL_OVERHEAD_TOKENS = 12  # wrapper around each tool definition (type, function, name keys)
PARAMETER_OVERHEAD_TOKENS = 6


def tool_schema_tokens(specs: Sequence[Tool]) -> int:
    """A conservative count for the tool definitions sent with every call.

    Computed from lengths (JSON runs ~3 characters per token) rather than by encoding the
    schemas: it is paid once per loop, and a few tokens either way do not move a ratio.
    """
    total = 0
    for spec in specs:
        chars = len(spec.name) + len(spec.description)
        if spec.schema is not None:  # a whole schema (nested types): its JSON is what is sent
            chars += len(json.dumps(spec.schema, default=str))
        else:
            for p in spec.parameters:
                chars += len(p.name) + len(p.type) + len(p.description) + sum(len(v) + 3 for v in p.enum or ())
                total += PARAMETER_OVERHEAD_TOKENS
        total += TOOL_OVERHEAD_TOKENS + chars // 3
    return total


class ContextLedger:
    """Messages plus their token counts, kept in step. Only the loop appends to it."""

    __slots__ = ("messages", "_counts", "_total", "_counted", "fixed", "scale", "window")

    def __init__(self, messages: Sequence[Message], window: int, *, fixed_tokens: int = 0) -> None:
        self.messages: list[Message] = list(messages)
        self._counts: list[int] = []
        self._total = 0
        self._counted = 0  # messages[:_counted] are counted
        self.fixed = fixed_tokens
        self.scale = 1.0
        self.window = window

    def _count_pending(self) -> None:
        if self._counted < len(self.messages):
            for message in self.messages[self._counted:]:
                count = message_tokens(message)
                self._counts.append(count)
                self._total += count
            self._counted = len(self.messages)

    @property
    def counts(self) -> list[int]:
        self._count_pending()
        return self._counts

    @property
    def total(self) -> int:
        self._count_pending()
        return self._total

    def append(self, message: Message) -> None:
        self.messages.append(message)  # counted when the size is next needed

    def replace(self, messages: list[Message], counts: list[int]) -> None:
        """Install a trimmed or compressed conversation (counts already known)."""
        self.messages = messages
        self._counts = list(counts)
        self._total = sum(counts)
        self._counted = len(messages)

    @property
    def raw_tokens(self) -> int:
        """Our own estimate of the next prompt, before any correction from the provider."""
        return self.total + self.fixed

    @property
    def prompt_tokens(self) -> int:
        """What the next prompt is believed to cost, tool definitions included."""
        return int((self.total + self.fixed) * self.scale)

    def message_budget(self, ratio: float) -> int:
        """The largest sum of message counts that keeps the prompt within ``ratio`` of the window."""
        return int(ratio * self.window / self.scale) - self.fixed

    def observe_reported(self, input_tokens: int, raw_estimate: int) -> None:
        """The provider counted ``input_tokens`` for a prompt we estimated at ``raw_estimate``.
        The latest report wins, but never pulls the scale below 1."""
        if input_tokens > 0 and raw_estimate > 0:
            self.scale = max(1.0, input_tokens / raw_estimate)

    def observe_overflow(self, raw_estimate: int) -> None:
        """The provider rejected a prompt we estimated at ``raw_estimate`` as over the window:
        its real size was at least the window."""
        if raw_estimate > 0:
            self.scale = max(self.scale, self.window / raw_estimate)
