"""Tools from plain functions: the signature and docstring are the schema, pydantic checks
the arguments, a synchronous body runs in a worker thread.

``@tool`` (or ``FunctionTool.from_function(fn)``) reads:

- the tool's name from the function's name (or ``name=``), its description from the
  docstring's summary (or ``description=``);
- each parameter's JSON schema from its type annotation (anything pydantic can validate:
  ``str``, ``int``, ``Literal[...]``, ``list[str]``, ``Optional[...]``, enums, dataclasses,
  pydantic models, ``Annotated[..., Field(...)]``), its description from the docstring's
  entry for it (Google, reST or NumPy style, ``baton.tools.docstrings``), and its default.

Each call's arguments are validated (and coerced the lenient way: ``"5"`` for an ``int``)
by a pydantic model of the signature; what fails becomes a ``ToolArgumentsError`` listing
every problem, which the loop feeds back to the model to correct. An ``async def`` tool is
awaited; a plain ``def`` runs in a worker thread (``asyncio.to_thread``, which carries the
context variables), so a slow or blocking tool never stalls the event loop and the other
calls of its turn.

Decisions (what other frameworks leave implicit):

- A parameter without a type annotation, ``*args`` / ``**kwargs``, or a positional-only
  parameter is refused when the tool is made (``ConfigurationError``): the model cannot be
  told what to send, and the loop calls tools by keyword.
- A result that is a ``str`` or ``ToolOutput`` is kept; ``None`` reads "(the tool returned
  nothing)" as for any tool; a dict, list, dataclass or pydantic model is sent as JSON;
  anything else as ``str(result)``.
- Property titles pydantic would add are left out of the schema: they repeat the names and
  cost tokens on every call.

``FunctionTool(spec, fn)`` keeps the hand-written form: ``spec`` (``Tool`` with
``ToolParameter``s) is what the model sees, and the arguments are checked against the
declared JSON types (an optional parameter may be sent as null).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Optional, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from baton.errors import ConfigurationError, ToolArgumentsError
from baton.messages import Tool, ToolParameter
from baton.tools.base import ToolOutput, signature_text
from baton.tools.docstrings import parse_docstring

ToolFunction = Callable[..., Any]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
_JSON_TYPES: dict[str, Any] = {"string": str, "number": float, "integer": int, "boolean": bool,
                               "array": list[Any], "object": dict[str, Any]}
_LENIENT = ConfigDict(extra="forbid", coerce_numbers_to_str=True, arbitrary_types_allowed=True)
_KEEP_VALUES = frozenset({"default", "enum", "const", "examples"})  # schema keys whose values are data


class FunctionTool:
    """A function (sync or async) answering a tool's calls with keyword arguments
    (module docstring)."""

    def __init__(self, spec: Tool, fn: ToolFunction, *, arguments: type[BaseModel] | None = None,
                 json_results: bool = False) -> None:
        self.spec = spec
        self.fn = fn
        self.arguments_model: type[BaseModel] = arguments if arguments is not None else _model_for_spec(spec)
        self._aliases = {name: info.alias or name for name, info in self.arguments_model.model_fields.items()}
        self._is_async = inspect.iscoroutinefunction(fn)
        self._json_results = json_results

    @classmethod
    def from_function(cls, fn: ToolFunction, *, name: str | None = None, description: str | None = None,
                      sequential_only: bool = False) -> FunctionTool:
        """The tool described by ``fn``'s signature and docstring (module docstring)."""
        tool_name = name or str(getattr(fn, "__name__", ""))
        if not _NAME.match(tool_name):
            raise ConfigurationError(f"tool name {tool_name!r} is not 1-64 letters, digits, '_' or '-': pass name=...")
        doc = parse_docstring(inspect.getdoc(fn))
        model = _model_for_function(fn, tool_name, doc.parameters)
        schema = _schema(model)
        spec = Tool(name=tool_name, description=description or doc.description or f"The {tool_name} tool.",
                    parameters=_parameters(schema), sequential_only=sequential_only, schema=schema)
        return cls(spec, fn, arguments=model, json_results=True)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments for the function: ``arguments`` validated and coerced;
        only those the model sent (the function's own defaults apply to the rest).
        ``ToolArgumentsError`` listing every problem otherwise."""
        try:
            parsed = self.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(_problem(e) for e in exc.errors(include_url=False))
            raise ToolArgumentsError(f"{self.spec.name!r} was called with invalid arguments: {problems}. "
                                     f"{signature_text(self.spec)}", tool_name=self.spec.name) from None
        return {self._aliases[field]: getattr(parsed, field) for field in parsed.model_fields_set}

    async def __call__(self, arguments: dict[str, Any]) -> str | ToolOutput | None:
        kwargs = self.validate(arguments)
        if self._is_async:
            result = await self.fn(**kwargs)
        else:
            result = await asyncio.to_thread(self.fn, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        if self._json_results:
            return _as_result(result)
        return result  # type: ignore[no-any-return]  # the hand-written form: as the function returned it (the loop reads it)


@overload
def tool(fn: ToolFunction, /) -> FunctionTool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None,
         sequential_only: bool = False) -> Callable[[ToolFunction], FunctionTool]: ...


def tool(fn: ToolFunction | None = None, /, *, name: str | None = None, description: str | None = None,
         sequential_only: bool = False) -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """``@tool`` or ``@tool(name=..., description=..., sequential_only=...)``: the decorated
    function as a ``FunctionTool`` (module docstring)."""
    def make(function: ToolFunction) -> FunctionTool:
        return FunctionTool.from_function(function, name=name, description=description, sequential_only=sequential_only)

    return make if fn is None else make(fn)


# --- the arguments model ------------------------------------------------------------------

def _model_for_function(fn: ToolFunction, tool_name: str, described: dict[str, str]) -> type[BaseModel]:
    where = getattr(fn, "__qualname__", tool_name)
    target = inspect.unwrap(fn)
    function = getattr(target, "__func__", target)  # a bound method's function holds the annotations
    try:
        signature = inspect.signature(fn)
        # the parameters' annotations only: a return type the model never sees must not stop the tool
        annotations = {k: v for k, v in getattr(function, "__annotations__", {}).items() if k != "return"}
        hints = typing.get_type_hints(types.SimpleNamespace(__annotations__=annotations),
                                      globalns=getattr(function, "__globals__", None), include_extras=True)
    except (NameError, TypeError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the signature of {where}: {exc}") from exc
    fields: dict[str, Any] = {}
    for index, (pname, param) in enumerate(signature.parameters.items()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ConfigurationError(f"{where}: parameter {pname!r} must be an ordinary or keyword-only parameter "
                                     "(a tool is called with its arguments by name)")
        if pname not in hints:
            raise ConfigurationError(f"{where}: parameter {pname!r} has no type annotation; the model needs its type")
        options: dict[str, Any] = {"alias": pname}
        if pname in described:
            options["description"] = described[pname]
        default = ... if param.default is param.empty else param.default
        fields[f"p{index}"] = (hints[pname], Field(default, **options))
    try:
        return create_model(f"{tool_name}_arguments", __config__=_LENIENT, **fields)
    except Exception as exc:  # a type pydantic cannot validate
        raise ConfigurationError(f"{where}: cannot build a schema for its parameters: {exc}") from exc


def _model_for_spec(spec: Tool) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for index, parameter in enumerate(spec.parameters):
        kind: Any = _JSON_TYPES.get(parameter.type, Any)
        if parameter.enum:
            kind = Literal[tuple(parameter.enum)]
        if parameter.required:
            fields[f"p{index}"] = (kind, Field(..., alias=parameter.name))
        else:
            fields[f"p{index}"] = (Optional[kind], Field(None, alias=parameter.name))  # noqa: UP045  (kind is any runtime type)
    return create_model(f"{spec.name}_arguments", __config__=_LENIENT, **fields)


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _untitled(model.model_json_schema(by_alias=True))
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return schema


def _untitled(node: Any) -> Any:
    """The schema without pydantic's ``title`` keys (module docstring); values of data keys
    (defaults, enums) are left as they are."""
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _untitled(sub) for name, sub in value.items()}
        else:
            out[key] = value if key in _KEEP_VALUES else _untitled(value)
    return out


def _parameters(schema: dict[str, Any]) -> list[ToolParameter]:
    """The top-level parameters as ``ToolParameter``s (what error messages and the context
    ledger read); the schema itself is what the model is shown."""
    required = set(schema.get("required", ()))
    found = []
    for pname, sub in schema.get("properties", {}).items():
        kinds = [sub.get("type")] + [o.get("type") for o in sub.get("anyOf", ()) if isinstance(o, dict)]
        kind = next((k for k in kinds if isinstance(k, str) and k != "null"), "object")
        enum = sub.get("enum") if isinstance(sub.get("enum"), list) and all(isinstance(v, str) for v in sub["enum"]) else None
        items = sub.get("items") if kind == "array" and isinstance(sub.get("items"), dict) else None
        found.append(ToolParameter(pname, kind, str(sub.get("description") or ""), required=pname in required,
                                   enum=enum, items=items))
    return found


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
    if error.get("type") == "missing":
        return f"missing required parameter {where}"
    if error.get("type") == "extra_forbidden":
        return f"unknown parameter {where}"
    return f"{where}: {error.get('msg')}"


def _as_result(result: Any) -> str | ToolOutput | None:
    if result is None or isinstance(result, (str, ToolOutput)):
        return result  # None: the loop says the tool returned nothing
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        result = dataclasses.asdict(result)
    if isinstance(result, (dict, list, tuple)):
        return json.dumps(result, default=str, ensure_ascii=False)
    return str(result)
