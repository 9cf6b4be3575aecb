"""An answer's JSON-compatible dict in one pass of plain Python, for the answers every
question makes (``AIMessage.to_dict``).

The pydantic ``TypeAdapter`` in ``baton.response`` is the definition of the wire format;
through it every answer cost about 0.1 ms of CPU more than the dict itself (issue 26): the
adapter walks every field and calls back into Python for each free-form one. Here the fields
are read in the dataclass's order and converted as the adapter converts them: free-form
(``TAGGED``) fields with ``to_jsonable``, the table and the sources field by field, the rest
as they are. That holds only for a message whose fields hold the types they declare; for any
other (a field set to something else, a subclass) the writer returns None and the
adapter writes it, warnings and all. ``tests/test_answer_dict.py`` holds the two to the same
output.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from enum import Enum
from typing import Any

from baton.tagged_json import to_jsonable

_MISSING = object()  # a value the fast path does not write: the adapter does


def _str(value: Any) -> Any:
    return value if type(value) is str else _MISSING


def _optional_str(value: Any) -> Any:
    return value if value is None or type(value) is str else _MISSING


def _bool(value: Any) -> Any:
    return value if type(value) is bool else _MISSING


def _int(value: Any) -> Any:
    return value if type(value) is int else _MISSING


def _float(value: Any) -> Any:
    return value if type(value) is float and math.isfinite(value) else _MISSING


def _str_list(value: Any) -> Any:
    if type(value) is not list or not all(type(item) is str for item in value):
        return _MISSING
    return list(value)


def _counts(value: Any) -> Any:
    """``dict[str, int]`` (token usage)."""
    if type(value) is not dict or not all(type(k) is str and type(v) is int for k, v in value.items()):
        return _MISSING
    return dict(value)


def _fields_of(value: Any, kind: type, fields: tuple[tuple[str, Callable[[Any], Any]], ...]) -> Any:
    """A nested dataclass (the table, a source) as a dict, or ``_MISSING``."""
    if type(value) is not kind:
        return _MISSING
    out = {}
    for name, convert in fields:
        converted = convert(getattr(value, name))
        if converted is _MISSING:
            return _MISSING
        out[name] = converted
    return out


def _plan(message_type: type, table_type: type, source_type: type, response_type_enum: type[Enum]) -> tuple[tuple[str, Callable[[Any], Any]], ...] | None:
    """Each field of ``message_type`` (``AIMessage``) with its converter, in the dataclass's
    order; None (the adapter always) if the fields are not the ones this module knows."""
    table = (("columns", _str_list), ("rows", to_jsonable), ("column_types", _str_list), ("truncated", _bool),
             ("execution_ms", _float))
    source = (("source", _str), ("content", _str), ("chunk_id", _optional_str), ("score", to_jsonable),
              ("metadata", to_jsonable))

    def results(value: Any) -> Any:
        return None if value is None else _fields_of(value, table_type, table)

    def sources(value: Any) -> Any:
        if type(value) is not list:
            return _MISSING
        out = [_fields_of(item, source_type, source) for item in value]
        return _MISSING if any(item is _MISSING for item in out) else out

    def response_type(value: Any) -> Any:
        return value.value if type(value) is response_type_enum else _MISSING

    converters: dict[str, Callable[[Any], Any]] = {
        "content": _str, "data": to_jsonable, "artifacts": to_jsonable, "images": to_jsonable, "code": _optional_str,
        "source_documents": sources, "metadata": to_jsonable, "session_id": _optional_str, "turn_id": _str,
        "input": _optional_str, "query": _optional_str, "query_explanation": _optional_str, "results": results,
        "viz_type": _str, "viz_config": to_jsonable, "error": _optional_str, "workflow_id": _optional_str,
        "token_usage": _counts, "llm_provider": _str, "llm_model": _str, "response_type": response_type,
        "tool_call_log": to_jsonable, "suggested_followups": _str_list, "insights": to_jsonable,
        "context_usage_pct": _int, "staleness_warning": _optional_str, "created_at": to_jsonable,
        "error_code": _optional_str, "partial": _bool,
    }
    if [f.name for f in dataclasses.fields(message_type)] != list(converters) or \
            [f.name for f in dataclasses.fields(table_type)] != [name for name, _ in table] or \
            [f.name for f in dataclasses.fields(source_type)] != [name for name, _ in source]:
        return None
    return tuple(converters.items())


def dict_writer(message_type: type, table_type: type, source_type: type,
                response_type: type[Enum]) -> Callable[[Any], dict[str, Any] | None]:
    """A writer of ``message_type``'s dicts (``AIMessage``, with the table, source and
    response-type classes it holds, passed in: this module does not import ``baton.response``).
    The writer returns ``message`` as the adapter would dump it in JSON mode, or None when
    this module cannot say so (module docstring)."""
    plan = _plan(message_type, table_type, source_type, response_type)

    def plain_dict(message: Any) -> dict[str, Any] | None:
        if plan is None or type(message) is not message_type:
            return None
        values = message.__dict__
        out = {}
        for name, convert in plan:
            converted = convert(values[name])
            if converted is _MISSING:
                return None
            out[name] = converted
        return out

    return plain_dict
