"""Reading a dbt MetricFlow semantic-model file into Baton's model.

The file is what a dbt project holds (the standalone ``semantic_models:`` + ``metrics:`` spec
of dbt 1.6+); the demo's is ``baton/demo/metricflow.yaml``. How it maps:

- each **semantic model** is one Baton entity named after it, reading the table of its
  ``model: ref('table')`` (or ``node_relation: {alias, schema_name}``);
- **entities**: a ``foreign`` entity joins the semantic model whose ``primary`` (or
  ``unique``/``natural``) entity has the same name, on the two entities' ``expr`` columns;
- **dimensions**: ``categorical`` ones keep their name (a name used by two semantic models is
  an error: questions name dimensions without their entity); the ``agg_time_dimension``
  (``defaults`` or the measure's) is the entity's time column; MetricFlow assumes DATE or
  TIMESTAMP columns, so a column stored as text says how in ``config.meta.baton_time_format``
  (``month``, ``date``, ``timestamp``), else it is ``native``;
- **measures**: ``sum``, ``count``, ``count_distinct``, ``min``, ``max``, ``average``,
  ``sum_boolean``; others (``percentile``, ``median``) are refused;
- **metrics**: ``simple`` (``type_params.measure``, a name or ``{name: ...}``; its ``filter``
  of the form ``{{ Dimension('entity__dimension') }} <condition>`` becomes the measure's own
  row filter, the dimension replaced by its expression), ``ratio`` and ``derived`` (over
  metrics); ``cumulative`` and ``conversion`` metrics are refused;
- synonyms, which MetricFlow has no field for, are read from ``config.meta.synonyms`` (or
  ``meta.synonyms``) of metrics, dimensions and semantic models; a dimension with
  ``config.meta.hidden: true`` serves metric filters only (``deleted_at``), never questions;
  ``config.meta.decimals`` sets a metric's rounding.

Everything then goes through the same checks as Baton's own YAML (``native.validate``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypedDict

from baton.semantic.errors import SemanticModelError
from baton.semantic.model import (
    Dimension,
    Entity,
    Join,
    Measure,
    Metric,
    SemanticModel,
    TimeColumn,
)
from baton.semantic.native import validate

_REF = re.compile(r"""^\s*ref\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\)\s*$""")
_DIMENSION = re.compile(r"""\{\{\s*Dimension\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\)\s*\}\}""")
_AGGS = {"sum": "sum", "count": "count", "count_distinct": "count_distinct", "min": "min", "max": "max",
         "average": "avg", "avg": "avg", "sum_boolean": "sum"}


def _mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (a YAML field may hold anything)."""
    return value if isinstance(value, Mapping) else {}


def _meta(node: Mapping) -> Mapping:
    meta = _mapping(node.get("config")).get("meta")
    return meta if isinstance(meta, Mapping) else _mapping(node.get("meta"))


class _MetricCommon(TypedDict, total=False):
    """The ``Metric`` fields every kind of metric reads the same way."""

    label: str
    synonyms: tuple[str, ...]
    description: str
    decimals: int


def _synonyms(node: Mapping) -> tuple[str, ...]:
    found = _meta(node).get("synonyms") or ()
    if not isinstance(found, (list, tuple)) or any(not isinstance(s, str) for s in found):
        raise SemanticModelError(f"{node.get('name')!r}: meta.synonyms is a list of strings")
    return tuple(found)


def _table(node: Mapping) -> tuple[str, str | None]:
    relation = node.get("node_relation")
    if isinstance(relation, Mapping) and relation.get("alias"):
        return str(relation["alias"]), (str(relation["schema_name"]) if relation.get("schema_name") else None)
    m = _REF.match(str(node.get("model") or ""))
    if not m:
        raise SemanticModelError(f"semantic model {node.get('name')!r}: model must be ref('table') (or node_relation)")
    return m.group(1), None


def _list(node: Mapping, key: str) -> list:
    value = node.get(key) or []
    if not isinstance(value, list) or any(not isinstance(v, Mapping) for v in value):
        raise SemanticModelError(f"{node.get('name')!r}: {key} is a list of mappings")
    return value


def model_from_metricflow(data: Any, *, default_name: str = "metricflow") -> SemanticModel:
    """A checked ``SemanticModel`` from a parsed MetricFlow YAML file (module docstring)."""
    if not isinstance(data, Mapping):
        raise SemanticModelError("a MetricFlow file is a YAML mapping with semantic_models and metrics")
    models = _list(data, "semantic_models")
    primary: dict[str, tuple[str, str]] = {}  # entity name -> (semantic model, key column)
    for sm in models:
        for entity in _list(sm, "entities"):
            if entity.get("type") in ("primary", "unique", "natural"):
                primary[str(entity["name"])] = (str(sm["name"]), str(entity.get("expr") or entity["name"]))
    entities, measures, dimensions = [], [], []
    measure_home: dict[str, str] = {}
    dimension_expr: dict[str, tuple[str, str]] = {}  # "entity__dimension" and bare name -> (semantic model, expr)
    for sm in models:
        name = str(sm.get("name") or "")
        table, schema = _table(sm)
        joins = []
        own = [str(e["name"]) for e in _list(sm, "entities") if e.get("type") in ("primary", "unique", "natural")]
        for entity in _list(sm, "entities"):
            if entity.get("type") == "foreign":
                target = primary.get(str(entity["name"]))
                if target is None:
                    raise SemanticModelError(f"{name}: foreign entity {entity['name']!r} is no semantic model's primary entity")
                joins.append(Join(target[0], ((str(entity.get("expr") or entity["name"]), target[1]),)))
        defaults = sm.get("defaults") if isinstance(sm.get("defaults"), Mapping) else {}
        time_name = defaults.get("agg_time_dimension")
        time = None
        for dim in _list(sm, "dimensions"):
            dim_name = str(dim.get("name") or "")
            expr = str(dim.get("expr") or dim_name)
            for prefix in own:
                dimension_expr[f"{prefix}__{dim_name}"] = (name, expr)
            dimension_expr.setdefault(dim_name, (name, expr))
            if dim.get("type") == "time":
                if time_name is None or dim_name == time_name:
                    fmt = str(_meta(dim).get("baton_time_format") or "native")
                    time = TimeColumn(expr, fmt)
                continue
            if _meta(dim).get("hidden"):  # filters may use it; questions never group by it
                continue
            dimensions.append(Dimension(dim_name, name, expr, str(dim.get("label") or ""), _synonyms(dim),
                                        description=str(dim.get("description") or "")))
        for measure in _list(sm, "measures"):
            agg = _AGGS.get(str(measure.get("agg") or "").lower())
            if agg is None:
                raise SemanticModelError(f"measure {measure.get('name')!r}: aggregation {measure.get('agg')!r} is not supported")
            expr = str(measure.get("expr") if measure.get("expr") is not None else ("1" if agg == "count" else measure["name"]))
            measures.append(Measure(str(measure["name"]), name, agg, expr, description=str(measure.get("description") or "")))
            measure_home[str(measure["name"])] = name
        entities.append(Entity(name, table, schema, time, tuple(joins), _synonyms(sm), str(sm.get("description") or "")))
    metrics = []
    for raw in _list(data, "metrics"):
        metrics.append(_metric(raw, measures, measure_home, dimension_expr))
    model = SemanticModel(str(data.get("name") or default_name), tuple(entities), tuple(measures), tuple(metrics),
                          tuple(dimensions))
    validate(model)
    return model


def _metric(raw: Mapping, measures: list[Measure], home: dict[str, str], dimension_expr: dict) -> Metric:
    name = str(raw.get("name") or "")
    kind = str(raw.get("type") or "simple").lower()
    params = _mapping(raw.get("type_params"))
    common: _MetricCommon = {"label": str(raw.get("label") or ""), "synonyms": _synonyms(raw), "description": str(raw.get("description") or "")}
    decimals = _meta(raw).get("decimals")
    if decimals is not None:
        common["decimals"] = int(decimals)
    if kind == "simple":
        measure = params.get("measure")
        measure = str(measure.get("name") if isinstance(measure, Mapping) else measure or "")
        if measure not in home:
            raise SemanticModelError(f"metric {name!r}: measure {measure!r} is not defined")
        if raw.get("filter"):
            measure = _filtered(name, measure, str(raw["filter"]), measures, home, dimension_expr)
        return Metric(name, "simple", measure=measure, **common)
    if kind == "ratio":
        def ref(value: Any) -> str:
            return str(value.get("name") if isinstance(value, Mapping) else value or "")

        return Metric(name, "ratio", numerator=ref(params.get("numerator")), denominator=ref(params.get("denominator")), **common)
    if kind == "derived":
        return Metric(name, "derived", expr=str(params.get("expr") or ""), **common)
    raise SemanticModelError(f"metric {name!r}: {kind} metrics are not supported (simple, ratio and derived are)")


def _filtered(metric: str, measure: str, text: str, measures: list[Measure], home: dict[str, str], dimension_expr: dict) -> str:
    """A copy of ``measure`` whose row filter is the metric's filter, dimensions resolved."""
    entity = home[measure]

    def resolve(m: re.Match) -> str:
        found = dimension_expr.get(m.group(1))
        if found is None or found[0] != entity:
            raise SemanticModelError(f"metric {metric!r}: its filter's dimension {m.group(1)!r} is not on the measure's semantic model")
        return f"({found[1]})"

    condition = _DIMENSION.sub(resolve, text)
    if "{{" in condition or "{%" in condition:
        raise SemanticModelError(f"metric {metric!r}: only {{{{ Dimension('...') }}}} may appear in a filter")
    base = next(m for m in measures if m.name == measure)
    copy_name = f"{measure}__{metric}"
    measures.append(Measure(copy_name, base.entity, base.agg, base.expr, condition, base.description))
    home[copy_name] = entity
    return copy_name


__all__ = ["model_from_metricflow"]
