"""The message protocol between Baton and any LLM (seed 002 "Data Models").

Plain dataclasses: they are created on every loop iteration, so they stay cheap. Providers
translate them to and from their wire formats; nothing else in Baton speaks a wire format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


@dataclass(slots=True)
class ToolCall:
    """One call the model asked for.

    ``arguments`` is the parsed JSON object. When the model sent arguments that do not parse
    (invalid or truncated JSON), the provider keeps the text in ``raw_arguments``, leaves
    ``arguments`` empty and explains in ``arguments_error``; the loop turns that into a
    ``ToolArgumentsError`` fed back to the model instead of crashing.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    arguments_error: str | None = None


@dataclass(slots=True)
class Message:
    """One conversation turn: ``system | user | assistant | tool``."""

    role: str
    content: str = ""
    tool_call_id: str | None = None  # for role="tool": the call this answers
    name: str | None = None  # tool name, for role="tool"
    tool_calls: list[ToolCall] | None = None  # for role="assistant" with tools

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
        return cls("assistant", content, tool_calls=tool_calls or None)

    @classmethod
    def tool(cls, call: ToolCall, content: str) -> Message:
        return cls("tool", content, tool_call_id=call.id, name=call.name)


@dataclass(slots=True)
class ToolParameter:
    """One parameter of a tool, as the model sees it."""

    name: str
    type: str  # "string" | "number" | "integer" | "boolean" | "array" | "object"
    description: str
    required: bool = True
    enum: list[str] | None = None
    items: dict[str, Any] | None = None  # JSON schema of array items, for type="array"

    def to_json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        if self.type == "array":
            schema["items"] = self.items or {"type": "string"}
        return schema


@dataclass(slots=True)
class Tool:
    """A tool offered to the model. ``sequential_only`` tools never run concurrently with
    the other calls of the same turn (the loop runs that whole turn in order).

    ``schema``, when given, is the parameters' whole JSON Schema (nested types included, as
    a tool made from a function has it: ``baton.tools.function``); ``parameters`` then
    lists its top-level properties for error messages and token estimates."""

    name: str
    description: str
    parameters: list[ToolParameter] = field(default_factory=list)
    sequential_only: bool = False
    schema: dict[str, Any] | None = None

    def to_json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON Schema object (what every provider's tool format wraps)."""
        if self.schema is not None:
            return dict(self.schema)
        return {
            "type": "object",
            "properties": {p.name: p.to_json_schema() for p in self.parameters},
            "required": [p.name for p in self.parameters if p.required],
            "additionalProperties": False,
        }


@dataclass(slots=True)
class LLMResponse:
    """What one model call returned. ``usage`` holds ``input_tokens``/``output_tokens``."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    model: str = ""
    provider: str = ""
    finish_reason: str = ""


@dataclass(slots=True)
class StreamChunk:
    """One piece of a streamed completion: text deltas, then a last chunk carrying the
    assembled ``response`` (content, tool calls, usage)."""

    delta: str = ""
    response: LLMResponse | None = None


def add_usage(total: dict[str, int], usage: dict[str, int] | None) -> dict[str, int]:
    """Merge token counters in place (seed 002 ``BaseAgent.accum_usage``) and return ``total``."""
    if usage:
        for key, value in usage.items():
            if isinstance(value, int):
                total[key] = total.get(key, 0) + value
    return total
