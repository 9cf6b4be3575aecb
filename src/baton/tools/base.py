"""The tool protocol: ``RunnableTool`` (what the loop calls), ``CallAwareTool`` (a tool that
is handed the whole call), ``ToolOutput`` (text for the model, payload for the program).
See ``baton.tools`` for the whole story."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from baton.messages import Tool, ToolCall


@dataclass(slots=True)
class ToolOutput:
    """A tool's result: ``text`` for the model, ``payload`` for the program (never shown to
    the model), ``is_error`` when the text reports a failure."""

    text: str
    payload: Any = None
    is_error: bool = False


@runtime_checkable
class RunnableTool(Protocol):
    """What the loop can call. ``spec`` is what the model is shown. A result that is not a
    ``ToolOutput`` is shown to the model as text (``None``: "the tool returned nothing")."""

    spec: Tool

    async def __call__(self, arguments: dict[str, Any]) -> str | ToolOutput | None: ...


@runtime_checkable
class CallAwareTool(RunnableTool, Protocol):
    """A tool the loop runs with the whole call, so it can key per-call state by
    ``call.id``. ``call.arguments`` is the tool's own copy."""

    async def run_call(self, call: ToolCall) -> str | ToolOutput | None: ...


def signature_text(spec: Tool) -> str:
    """The parameters of ``spec`` in one sentence, for an error the model must correct."""
    if not spec.parameters:
        return f"{spec.name!r} takes no parameters."
    parts = [f"{p.name} ({p.type}{', required' if p.required else ''}){': ' + p.description if p.description else ''}"
             for p in spec.parameters]
    return f"{spec.name!r} takes: " + "; ".join(parts) + "."

