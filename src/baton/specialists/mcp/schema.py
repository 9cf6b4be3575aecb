"""An MCP tool as the specialist's model sees it, and its arguments checked before sending.

MCP tools describe their input with any JSON Schema; Baton's ``Tool`` offers flat
parameters (name, type, description, enum, array items). The conversion keeps every
top-level property; a nested object's schema is written into its description (so the model
still sees it) and the full schema is enforced on the way out by ``check_arguments`` with
``jsonschema``, so a malformed call never reaches the server.

Arguments are also bounded: at most ``MAX_ARGUMENT_BYTES`` of JSON, because a model (or
whoever steers it) can produce megabytes of text that a third-party server would happily
read.
"""

from __future__ import annotations

import json
from typing import Any

from baton.agents.agent_tool import tool_name_for
from baton.messages import Tool, ToolParameter
from baton.specialists.mcp.errors import MCPToolArgumentsError

MAX_ARGUMENT_BYTES = 256_000
_SIMPLE = {"string", "number", "integer", "boolean", "array", "object"}


def json_object(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a server's schema may hold anything)."""
    return value if isinstance(value, dict) else {}


def tool_spec(tool: Any, *, name: str | None = None) -> Tool:
    """The Baton ``Tool`` for an MCP tool (``mcp.types.Tool``)."""
    schema = json_object(getattr(tool, "input_schema", None))
    properties = json_object(schema.get("properties"))
    required = set(schema.get("required") or ()) if isinstance(schema.get("required"), list) else set()
    parameters = [_parameter(key, value if isinstance(value, dict) else {}, key in required) for key, value in properties.items()]
    description = (getattr(tool, "description", None) or getattr(tool, "title", None) or f"The {tool.name} tool.").strip()
    return Tool(name=name or tool_name_for(tool.name), description=description[:2000], parameters=parameters)


def _parameter(key: str, schema: dict[str, Any], required: bool) -> ToolParameter:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the first real type
        kind = next((k for k in kind if k in _SIMPLE), "string")
    if kind not in _SIMPLE:
        kind = "object" if "properties" in schema else "string"
    description = str(schema.get("description") or schema.get("title") or key)
    if kind == "object" and isinstance(schema.get("properties"), dict):
        description += " Schema: " + json.dumps(schema, default=str)[:1500]
    enum = schema.get("enum")
    enum = [str(v) for v in enum] if isinstance(enum, list) and all(isinstance(v, str) for v in enum) else None
    items = schema.get("items") if kind == "array" and isinstance(schema.get("items"), dict) else None
    return ToolParameter(key, kind, description[:1000], required=required, enum=enum, items=items)


def check_arguments(tool: Any, arguments: Any, *, server: str, max_bytes: int = MAX_ARGUMENT_BYTES) -> dict[str, Any]:
    """``arguments`` when they are a JSON object within ``max_bytes`` that satisfies the
    tool's input schema; ``MCPToolArgumentsError`` otherwise (nothing is sent)."""
    name = tool.name
    if not isinstance(arguments, dict):
        raise MCPToolArgumentsError(f"arguments for {name!r} must be a JSON object, got {type(arguments).__name__}",
                                    server=server, tool=name)
    try:
        size = len(json.dumps(arguments, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise MCPToolArgumentsError(f"arguments for {name!r} are not plain JSON: {exc}", server=server, tool=name) from None
    if size > max_bytes:
        raise MCPToolArgumentsError(f"arguments for {name!r} are {size} bytes of JSON (limit {max_bytes})",
                                    server=server, tool=name)
    schema = getattr(tool, "input_schema", None)
    if isinstance(schema, dict) and schema:
        from jsonschema import SchemaError
        from jsonschema.exceptions import best_match
        from jsonschema.validators import validator_for

        try:
            validator = validator_for(schema)(schema)
            error = best_match(validator.iter_errors(arguments))
        except (SchemaError, Exception):  # the server's schema is broken: let the server judge
            error = None
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "arguments"
            raise MCPToolArgumentsError(f"arguments for {name!r} do not match its schema at {where}: {error.message[:300]}",
                                        server=server, tool=name)
    return arguments
