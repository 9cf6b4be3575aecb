"""Tool-call arguments from a model: parsed when they are a JSON object, kept when not.

Model output is untrusted input. Invalid or truncated JSON (a stream cut short, a model
that forgot a brace) must never crash a provider: the call keeps the text in
``raw_arguments`` and the reason in ``arguments_error``, and the loop feeds that back to
the model as a tool error so it can try again.
"""

from __future__ import annotations

import json
from typing import Any

from baton.messages import ToolCall


def parse_tool_call(call_id: str, name: str, raw: Any) -> ToolCall:
    """A ``ToolCall`` from wire arguments: a JSON text, an already-decoded object, or None."""
    if raw is None or raw == "":
        return ToolCall(id=call_id, name=name, arguments={})
    if isinstance(raw, dict):
        return ToolCall(id=call_id, name=name, arguments=raw)
    if not isinstance(raw, str):
        text = repr(raw)
        return ToolCall(id=call_id, name=name, raw_arguments=text,
                        arguments_error=f"arguments must be a JSON object, got {type(raw).__name__}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        why = ("truncated JSON (the output was cut off)" if _unfinished(raw)
               else f"invalid JSON: {exc.msg} (character {exc.pos})")
        return ToolCall(id=call_id, name=name, raw_arguments=raw, arguments_error=why)
    if not isinstance(value, dict):
        return ToolCall(id=call_id, name=name, raw_arguments=raw,
                        arguments_error=f"arguments must be a JSON object, got {type(value).__name__}")
    return ToolCall(id=call_id, name=name, arguments=value)


def _unfinished(text: str) -> bool:
    """True when ``text`` stops inside a string or with brackets still open: the mark of
    output cut short (a token limit, a dropped stream) rather than of bad syntax."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_string or depth > 0 or text.rstrip().endswith((":", ","))


def wire_arguments(call: ToolCall) -> str:
    """The JSON text to send back for a call in the history. A call whose arguments did
    not parse is echoed as ``{}``: strict servers reject invalid JSON in history, and the
    tool result that follows already tells the model what was wrong."""
    if call.arguments_error:
        return "{}"
    return json.dumps(call.arguments, ensure_ascii=False)
