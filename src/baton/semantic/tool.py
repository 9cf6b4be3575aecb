"""The ``semantic_query`` tool: with a model, the SQL specialist asks for metrics, not SQL.

The model fills metrics, group-by dimensions, filters, periods, grain, order and limit —
names from the model's own lists (JSON-schema enums), so it cannot invent a metric — and the
compiler writes the SQL: the cents conversion, the soft-delete filter and the joins are
right every time. ``run_sql`` stays offered, for what the semantic model cannot express.

Filter values must be values the data holds (``SemanticLayer.resolve_values``: matched to
the indexed values, case and accents aside); anything else is refused with the reason and a
few of the real values, and the model may try again. The compiled SQL then goes through the
same validation pass as any SQL the model writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from baton.messages import LLMResponse, Tool, ToolCall, ToolParameter
from baton.semantic.model import GRAINS, TIME
from baton.semantic.periods import Period
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.specialists.sql.semantic_port import TOOL_NAME, SemanticCandidate

if TYPE_CHECKING:
    from baton.semantic.layer import SemanticLayer

NAME = TOOL_NAME
SAMPLE_VALUES = 8


def semantic_tool(layer: SemanticLayer) -> Tool:
    model = layer.model
    metrics = [m.name for m in model.metrics]
    dimensions = [d.name for d in model.dimensions]
    return Tool(
        name=NAME,
        description=("Answer with the workspace's semantic model: choose metrics, how to break them down and filter them; "
                     "the SQL is compiled for you (unit conversions, soft-deleted rows and joins are handled). Prefer this "
                     "to run_sql whenever the metrics and dimensions below can express the question."),
        parameters=[
            ToolParameter("metrics", "array", "Metrics to compute.", items={"type": "string", "enum": metrics}),
            ToolParameter("by", "array", "Dimensions to group by; 'time' groups by the time grain.", required=False,
                          items={"type": "string", "enum": [*dimensions, TIME]}),
            ToolParameter("grain", "string", "Time grain when grouping by time.", required=False, enum=list(GRAINS)),
            ToolParameter("filters", "array", "Keep only these dimension values.", required=False, items={
                "type": "object", "additionalProperties": False, "required": ["dimension", "values"],
                "properties": {"dimension": {"type": "string", "enum": dimensions},
                               "values": {"type": "array", "items": {"type": "string"}}}}),
            ToolParameter("periods", "array", "Time periods to keep: 2025, 2025-Q3, 2025-03 or 2025-03-15.", required=False),
            ToolParameter("order_by", "string", "A metric or group-by dimension to sort by.", required=False),
            ToolParameter("descending", "boolean", "Sort descending (default for a metric).", required=False),
            ToolParameter("limit", "integer", "Keep only the first N rows (top N).", required=False),
            ToolParameter("explanation", "string", "One sentence: what this answers.", required=False),
        ],
    )


def catalog(layer: SemanticLayer) -> str:
    """The model's metrics and dimensions (with a few indexed values) for the prompt."""
    model = layer.model
    lines = ["Semantic model (use the semantic_query tool):", "Metrics:"]
    for m in model.metrics:
        lines.append(f"- {m.name}: {m.description or m.title}")
    lines.append("Dimensions:")
    for d in model.dimensions:
        values = list(layer.values.get(d.name, {}))[:SAMPLE_VALUES]
        lines.append(f"- {d.name}" + (f" (e.g. {', '.join(map(str, values))})" if values else ""))
    lines.append(f"- time (grains: {', '.join(GRAINS)}; data years: {', '.join(map(str, layer.years)) or 'unknown'})")
    refused = [r for r in model.refused if r.kind in ("metric", "dimension")]
    if refused:  # a model must not approximate these with its own SQL: the answer would be confidently wrong
        lines.append("Defined in the model but not computed by Baton (answer that it cannot compute them and why; "
                     "never approximate them with run_sql):")
        lines += [f"- {r.kind} {r.name}: {r.construct}" for r in refused[:40]]
    return "\n".join(lines)


def semantic_call(response: LLMResponse) -> ToolCall | None:
    return next((c for c in response.tool_calls if c.name == NAME), None)


def query_from_arguments(arguments: Any, layer: SemanticLayer) -> SemanticQuery:
    """The checked query a tool call asks for, its filter values matched to the data."""
    if not isinstance(arguments, Mapping):
        raise SemanticQueryError("the arguments are an object")
    where: dict[str, list[str]] = {}
    for item in arguments.get("filters") or ():
        if not isinstance(item, Mapping) or not isinstance(item.get("values"), list):
            raise SemanticQueryError("each filter is {dimension, values}")
        where.setdefault(str(item.get("dimension")), []).extend(str(v) for v in item["values"])
    periods = arguments.get("periods") or []
    if not isinstance(periods, list):
        raise SemanticQueryError("periods is a list")
    data: dict[str, Any] = {"metrics": arguments.get("metrics") or [], "by": arguments.get("by") or []}
    if arguments.get("grain"):
        data["grain"] = arguments["grain"]
    if where or periods:
        data["where"] = {**where, **({TIME: [str(Period.parse(str(p)).label) for p in periods]} if periods else {})}
    if arguments.get("order_by"):
        descending = arguments.get("descending")
        name = str(arguments["order_by"])
        data["order"] = [[name, "desc" if (descending if descending is not None else layer.model.has_metric(name)) else "asc"]]
    if arguments.get("limit") is not None:
        data["limit"] = arguments["limit"]
    query = layer.resolve_values(SemanticQuery.from_dict(data))
    return query.check(layer.model)


def compiled_call(arguments: Any, layer: SemanticLayer) -> SemanticCandidate | str:
    """A tool call's arguments compiled for the SQL specialist (``SemanticTools.candidate``),
    or why they were refused, said so the model can fix them."""
    try:
        compiled = layer.compile(query_from_arguments(arguments, layer))
    except SemanticQueryError as exc:
        return f"Semantic query refused: {exc}. Fix it, or use run_sql for what the semantic model cannot express."
    described = compiled.query.describe(layer.model)
    given = arguments.get("explanation") if isinstance(arguments, Mapping) else None
    return SemanticCandidate(compiled.sql, str(given or "") or f"Semantic query: {described}", described, compiled.query.to_dict())


PROMPT_NOTE = ("Prefer the semantic_query tool: it computes the workspace's defined metrics correctly. Use run_sql only "
               "for what the semantic model cannot express, and say so in your answer.")

__all__ = ["NAME", "PROMPT_NOTE", "catalog", "compiled_call", "query_from_arguments", "semantic_call", "semantic_tool"]
