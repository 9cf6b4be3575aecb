"""Running the tool calls of one turn: concurrently, in order, and never crashing the loop.

Every call ends as a ``ToolCallRecord`` whose ``output.text`` is what the model will see.
A failure is a typed ``ToolError`` kept in the record and shown to the model as
``Error (<ErrorType>): <what went wrong>`` so it can correct itself:

- the provider could not parse the arguments (``call.arguments_error``), the arguments are
  not an object, a required parameter is missing or an unknown one is present ->
  ``ToolArgumentsError`` (the message lists the parameters the tool takes);
- the tool is not offered in this loop -> ``UnknownToolError`` (the message lists those that are);
- the tool raised -> ``ToolExecutionError`` with the exception as ``__cause__``; a tool that
  raises a ``ToolError`` itself keeps its own type.

Several calls in one turn run concurrently with ``asyncio.gather``; if any *called* tool is
``sequential_only`` the whole turn runs in call order instead. Either way the records come
back in call order, whatever order the calls finished in. Arguments are copied before a
tool sees them, so a tool that mutates its arguments cannot rewrite the conversation. A
``CallAwareTool`` gets the whole call (a copy: its id, name and arguments), so it can key
per-call state by the id; any other tool gets the arguments.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

from baton.errors import ConfigurationError, ToolArgumentsError, ToolError, ToolExecutionError, UnknownToolError
from baton.events import Event, ToolEnd, ToolStart
from baton.loop.results import ToolCallRecord
from baton.messages import Tool, ToolCall
from baton.tools.base import CallAwareTool, RunnableTool, ToolOutput, signature_text

Emit = Callable[[Event], None]


class _Entry:
    __slots__ = ("tool", "spec", "required", "known", "aware")

    def __init__(self, tool: RunnableTool) -> None:
        self.tool = tool
        self.spec: Tool = tool.spec
        self.aware: CallAwareTool | None = tool if _call_aware(tool) else None
        self.required = tuple(p.name for p in self.spec.parameters if p.required)
        self.known = frozenset(p.name for p in self.spec.parameters)


_CALL_AWARE: dict[type, bool] = {}


def _call_aware(tool: RunnableTool) -> TypeGuard[CallAwareTool]:
    """``isinstance(tool, CallAwareTool)``, decided once per class: a check against a
    runtime protocol inspects every member (~13 us), and a dispatcher is built per loop run."""
    kind = type(tool)
    known = _CALL_AWARE.get(kind)
    if known is None:
        known = _CALL_AWARE[kind] = isinstance(tool, CallAwareTool)
    return known


def error_text(error: ToolError) -> str:
    """How a failed call reads to the model."""
    return f"Error ({type(error).__name__}): {error}"


class ToolDispatcher:
    """The tools of one loop, indexed by name. Built per ``run_loop`` call; holds no request state
    beyond the tool list it was given."""

    __slots__ = ("_entries", "specs")

    def __init__(self, tools: Sequence[RunnableTool]) -> None:
        self._entries: dict[str, _Entry] = {}
        for tool in tools:
            entry = _Entry(tool)
            if entry.spec.name in self._entries:
                raise ConfigurationError(f"two tools are named {entry.spec.name!r}; tool names must be unique in a loop")
            self._entries[entry.spec.name] = entry
        self.specs: list[Tool] = [e.spec for e in self._entries.values()]

    async def run_turn(self, calls: Sequence[ToolCall], iteration: int, emit: Emit) -> list[ToolCallRecord]:
        """Run one turn's calls and return their records in call order."""
        if len(calls) == 1:
            return [await self.run_one(calls[0], iteration, emit)]
        entries = self._entries
        if any((e := entries.get(c.name)) is not None and e.spec.sequential_only for c in calls):
            return [await self.run_one(call, iteration, emit) for call in calls]
        outcomes = await asyncio.gather(*(self.run_one(c, iteration, emit) for c in calls), return_exceptions=True)
        records: list[ToolCallRecord] = []
        for call, outcome in zip(calls, outcomes):
            if isinstance(outcome, ToolCallRecord):
                records.append(outcome)
            elif isinstance(outcome, Exception):  # run_one catches tool failures; this is a safety net
                error = ToolExecutionError(f"{type(outcome).__name__}: {outcome}", tool_name=call.name, call_id=call.id)
                error.__cause__ = outcome
                records.append(ToolCallRecord(call, ToolOutput(error_text(error), is_error=True), iteration, 0.0, error))
            else:  # KeyboardInterrupt, SystemExit, cancellation of the turn: not ours to swallow
                raise outcome
        return records

    async def run_one(self, call: ToolCall, iteration: int, emit: Emit) -> ToolCallRecord:
        emit(ToolStart(name=call.name, call_id=call.id, iteration=iteration, arguments=call.arguments))
        started = time.perf_counter()
        error: ToolError | None = None
        try:
            entry = self._entry_for(call)
            result = await self._invoke(entry, call)
            output = result if isinstance(result, ToolOutput) else ToolOutput(_as_text(result))
        except ToolError as exc:
            error = exc
            output = ToolOutput(error_text(exc), is_error=True)
        duration_ms = (time.perf_counter() - started) * 1000.0
        emit(ToolEnd(name=call.name, call_id=call.id, iteration=iteration, is_error=output.is_error,
                     duration_ms=duration_ms, error_type=type(error).__name__ if error is not None else None))
        return ToolCallRecord(call, output, iteration, duration_ms, error)

    def _entry_for(self, call: ToolCall) -> _Entry:
        entry = self._entries.get(call.name)
        if entry is None:
            offered = ", ".join(self._entries) or "none"
            raise UnknownToolError(
                f"there is no tool named {call.name!r}. Tools available: {offered}.", tool_name=call.name, call_id=call.id
            )
        if call.arguments_error is not None:
            raise ToolArgumentsError(
                f"the arguments for {call.name!r} could not be read ({call.arguments_error}). "
                f"Call it again with the arguments as one valid JSON object. {signature_text(entry.spec)}",
                tool_name=call.name, call_id=call.id,
            )
        arguments = call.arguments
        if not isinstance(arguments, dict):
            raise ToolArgumentsError(
                f"the arguments for {call.name!r} must be a JSON object, got {type(arguments).__name__}. {signature_text(entry.spec)}",
                tool_name=call.name, call_id=call.id,
            )
        missing = [name for name in entry.required if name not in arguments]
        unexpected = [name for name in arguments if name not in entry.known]
        if missing or unexpected:
            problems = []
            if missing:
                problems.append("missing required parameter(s): " + ", ".join(missing))
            if unexpected:
                problems.append("unknown parameter(s): " + ", ".join(unexpected))
            raise ToolArgumentsError(
                f"{call.name!r} was called with {'; '.join(problems)}. {signature_text(entry.spec)}",
                tool_name=call.name, call_id=call.id,
            )
        return entry

    @staticmethod
    async def _invoke(entry: _Entry, call: ToolCall) -> Any:
        try:
            if entry.aware is not None:  # it keys per-call state by the id (AgentTool's execution memory)
                return await entry.aware.run_call(ToolCall(call.id, call.name, dict(call.arguments)))
            return await entry.tool(dict(call.arguments))
        except ToolError as exc:
            exc.tool_name = exc.tool_name or call.name
            exc.call_id = exc.call_id or call.id
            raise
        except Exception as exc:
            raise ToolExecutionError(
                f"{call.name!r} failed: {type(exc).__name__}: {exc}", tool_name=call.name, call_id=call.id
            ) from exc


def _as_text(result: Any) -> str:
    """A tool's plain return value as the model's text. ``None`` says so rather than sending ''."""
    if isinstance(result, str):
        return result
    if result is None:
        return "(the tool returned nothing)"
    return str(result)
