"""What the loop hands back: one record per tool call, and the loop's result."""

from __future__ import annotations

from dataclasses import dataclass

from baton.errors import ToolError
from baton.messages import Message, ToolCall
from baton.tools import ToolOutput


@dataclass(slots=True)
class ToolCallRecord:
    """One dispatched tool call. ``output.text`` is exactly what the model was shown.

    A failed dispatch (malformed arguments, unknown tool, the tool raised) has
    ``output.is_error`` set and keeps the typed exception in ``error``, so the program sees
    the failure as a type while the model sees it as text.
    """

    call: ToolCall
    output: ToolOutput
    iteration: int
    duration_ms: float
    error: ToolError | None = None

    @property
    def is_error(self) -> bool:
        return self.output.is_error


@dataclass(slots=True)
class LoopResult:
    """The outcome of ``run_loop``.

    - ``content``: the final answer; at max iterations a partial answer composed from the
      tool outputs (``partial``); after ``stop_after_tools`` the last assistant text
      (``stopped_early``).
    - ``messages``: the whole final conversation (the caller's list is never modified).
    - ``iterations``: LLM calls charged to ``max_iterations``; ``llm_calls``: every call
      attempted, failed, refunded and retried ones included.
    - ``finish_reason``: the model's own reason on a normal answer (``stop``, ``length``,
      ...), else ``max_iterations`` or ``stopped_after_tools``.
    - ``context_usage_pct``: size of the last prompt sent, in percent of the window.
    - ``refunds``, ``wrapped_up``, ``trimmed_messages``, ``compressions``: what the
      context-pressure and error rules did along the way.
    """

    content: str
    messages: list[Message]
    iterations: int
    llm_calls: int
    usage: dict[str, int]
    tool_calls: list[ToolCallRecord]
    partial: bool
    stopped_early: bool
    finish_reason: str
    model: str
    provider: str
    context_usage_pct: int
    refunds: int = 0
    wrapped_up: bool = False
    trimmed_messages: int = 0
    compressions: int = 0
