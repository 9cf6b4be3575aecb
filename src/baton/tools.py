"""Executable tools: a ``Tool`` schema plus the code that answers it.

The loop dispatches a model's ``ToolCall`` to a ``RunnableTool``. What the model sees is
always a string; a tool may return a ``ToolOutput`` to also hand the program a typed payload
(the side channel seed 000 uses to keep a specialist's full answer).
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol, runtime_checkable

from baton.messages import Tool


@dataclass(slots=True)
class ToolOutput:
    """A tool's result: ``text`` for the model, ``payload`` for the program (never shown to
    the model), ``is_error`` when the text reports a failure."""

    text: str
    payload: Any = None
    is_error: bool = False


@runtime_checkable
class RunnableTool(Protocol):
    """What the loop can call. ``spec`` is what the model is shown."""

    spec: Tool

    async def __call__(self, arguments: dict[str, Any]) -> str | ToolOutput: ...


ToolFunction = Callable[..., "str | ToolOutput | Awaitable[str | ToolOutput]"]


class FunctionTool:
    """Wraps a plain function (sync or async) taking the tool's arguments as keywords."""

    def __init__(self, spec: Tool, fn: ToolFunction) -> None:
        self.spec = spec
        self.fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)

    async def __call__(self, arguments: dict[str, Any]) -> str | ToolOutput:
        result = self.fn(**arguments)
        if self._is_async or inspect.isawaitable(result):
            result = await result
        return result


# The id of the tool call being dispatched, set by the loop around each tool invocation.
# A context variable (not an argument) so ``RunnableTool.__call__`` stays one-argument and
# concurrent calls each see their own id (asyncio copies the context per task).
CURRENT_CALL_ID: ContextVar[str | None] = ContextVar("baton_current_tool_call_id", default=None)
