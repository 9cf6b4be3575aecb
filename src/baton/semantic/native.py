"""Baton's semantic-model YAML, read and checked.

The file (``--semantic FILE``; the demo's is ``baton/demo/semantic.yaml``)::

    name: finance
    entities:
      - name: revenue_line
        table: monthly_revenue
        time: {column: month, format: month}      # month | date | timestamp | native
        # time: {column: ordered_at, format: native, entity: order}: another entity's, through the joins
        joins:
          - {to: product, on: {product_id: id}}  # many-to-one: local column -> its column
    measures:
      - {name: revenue_amount, entity: revenue_line, agg: sum, expr: revenue_cents / 100.0}
      - {name: tickets, entity: roadshow_event, agg: sum, expr: tickets_sold, filter: deleted_at IS NULL}
    metrics:
      - {name: revenue, measure: revenue_amount, synonyms: [sales, turnover]}
      - {name: profit, type: derived, expr: revenue - cost}
      - {name: average_ticket_price, type: ratio, numerator: ticket_revenue, denominator: tickets}
    dimensions:
      - {name: business_unit, entity: business_unit, expr: name, synonyms: [unit, division]}
      - {name: customer, entity: customer, expr: name, shown_with: [customer_id]}  # grouped with its key
    time_synonyms: [period]
    saved_queries:
      - {question: "What was total revenue in 2025?", query: {metrics: [revenue], where: {time: "2025"}}}

A metric without ``type`` is ``simple``. ``validate`` checks every name and reference, each
expression against the allowed subset (``expressions.py``) and that no metric refers to
itself; ``baton semantic check`` then checks the model against a database.

Decisions: YAML is read with ``yaml.safe_load`` (no tags that build objects), files over
1 MB and models over a few hundred parts are refused (a model is written by a person), and
an unknown key is an error (a typo such as ``filtr:`` must not silently drop a
soft-delete filter).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.semantic.errors import SemanticModelError
from baton.semantic.expressions import columns_of, dimensions_of, identifier, metric_references
from baton.semantic.model import (
    AGGREGATIONS,
    METRIC_TYPES,
    TIME,
    TIME_FORMATS,
    Dimension,
    Entity,
    Join,
    Measure,
    Metric,
    SavedQuery,
    SemanticModel,
    TimeColumn,
)

MAX_FILE_BYTES = 1_000_000
MAX_PARTS = 500
_KEYS = {
    "model": {"name", "description", "entities", "measures", "metrics", "dimensions", "saved_queries", "time_synonyms", "semantic_model"},
    "entity": {"name", "table", "schema", "time", "joins", "synonyms", "description"},
    "time": {"column", "format", "entity"},
    "join": {"to", "on"},
    "measure": {"name", "entity", "agg", "expr", "filter", "description"},
    "metric": {"name", "type", "measure", "numerator", "denominator", "expr", "label", "synonyms", "decimals", "description"},
    "dimension": {"name", "entity", "expr", "label", "synonyms", "index_values", "description", "shown_with"},
    "saved": {"question", "query"},
}


def read_yaml(path: str | Path) -> Any:
    import yaml

    from baton.semantic.mf_project import read_text

    path = Path(path)
    text = read_text(path, MAX_FILE_BYTES)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SemanticModelError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}") from None


def _mapping(value: Any, kind: str, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise SemanticModelError(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = set(value) - _KEYS[kind]
    if unknown:
        raise SemanticModelError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                                 f"(allowed: {', '.join(sorted(_KEYS[kind]))})")
    return value


def _list(value: Any, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SemanticModelError(f"{where}: expected a list")
    if len(value) > MAX_PARTS:
        raise SemanticModelError(f"{where}: more than {MAX_PARTS} entries")
    return value


def _words(value: Any, where: str) -> tuple[str, ...]:
    out = []
    for item in _list(value, where):
        if not isinstance(item, str) or not item.strip() or len(item) > 100:
            raise SemanticModelError(f"{where}: synonyms are short strings")
        out.append(item.strip())
    return tuple(out)


def _text(value: Any, where: str, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise SemanticModelError(f"{where}: expected text")
    return str(value)


def _time(value: Any, where: str) -> TimeColumn | None:
    if value is None:
        return None
    data = _mapping(value, "time", where)
    fmt = _text(data.get("format"), where, "date")
    if fmt not in TIME_FORMATS:
        raise SemanticModelError(f"{where}: time format {fmt!r} is not one of {', '.join(TIME_FORMATS)}")
    holder = data.get("entity")
    return TimeColumn(identifier(_text(data.get("column"), where), f"{where}: time column"), fmt,
                      identifier(str(holder), f"{where}: entity") if holder is not None else None)


def _entity(data: Any, i: int) -> Entity:
    where = f"entities[{i}]"
    data = _mapping(data, "entity", where)
    name = identifier(_text(data.get("name"), where), f"{where}: name")
    joins = []
    for j, raw in enumerate(_list(data.get("joins"), f"{where}.joins")):
        if isinstance(raw, Mapping) and True in raw:  # YAML 1.1 reads a bare `on:` key as true
            raw = {("on" if k is True else k): v for k, v in raw.items()}
        join = _mapping(raw, "join", f"{where}.joins[{j}]")
        on = join.get("on")
        if not isinstance(on, Mapping) or not on:
            raise SemanticModelError(f"{where}.joins[{j}]: 'on' maps local columns to the other entity's columns")
        pairs = tuple((identifier(str(k), f"{where}.joins[{j}]: column"), identifier(str(v), f"{where}.joins[{j}]: column"))
                      for k, v in on.items())
        joins.append(Join(identifier(_text(join.get("to"), where), f"{where}.joins[{j}]: to"), pairs))
    schema = data.get("schema")
    return Entity(name, identifier(_text(data.get("table"), where), f"{where}: table"),
                  identifier(str(schema), f"{where}: schema") if schema is not None else None,
                  _time(data.get("time"), f"{where}.time"), tuple(joins), _words(data.get("synonyms"), f"{where}.synonyms"),
                  _text(data.get("description"), where))


def _measure(data: Any, i: int) -> Measure:
    where = f"measures[{i}]"
    data = _mapping(data, "measure", where)
    agg = _text(data.get("agg"), where, "sum").lower()
    if agg == "average":
        agg = "avg"
    if agg not in AGGREGATIONS:
        raise SemanticModelError(f"{where}: agg {agg!r} is not one of {', '.join(AGGREGATIONS)}")
    expr = _text(data.get("expr"), where, "1" if agg == "count" else "")
    return Measure(identifier(_text(data.get("name"), where), f"{where}: name"),
                   identifier(_text(data.get("entity"), where), f"{where}: entity"), agg, expr or _text(data.get("name"), where),
                   _text(data.get("filter"), where) or None, _text(data.get("description"), where))


def _metric(data: Any, i: int) -> Metric:
    where = f"metrics[{i}]"
    data = _mapping(data, "metric", where)
    kind = _text(data.get("type"), where, "simple").lower()
    if kind not in METRIC_TYPES:
        raise SemanticModelError(f"{where}: type {kind!r} is not one of {', '.join(METRIC_TYPES)}")
    decimals = data.get("decimals", 2)
    if not isinstance(decimals, int) or isinstance(decimals, bool) or not 0 <= decimals <= 6:
        raise SemanticModelError(f"{where}: decimals is a whole number from 0 to 6")

    def ref(key: str) -> str | None:
        value = data.get(key)
        return identifier(_text(value, where), f"{where}: {key}") if value is not None else None

    return Metric(identifier(_text(data.get("name"), where), f"{where}: name"), kind, ref("measure"), ref("numerator"),
                  ref("denominator"), _text(data.get("expr"), where) or None, _text(data.get("label"), where),
                  _words(data.get("synonyms"), f"{where}.synonyms"), decimals, _text(data.get("description"), where))


def _dimension(data: Any, i: int) -> Dimension:
    where = f"dimensions[{i}]"
    data = _mapping(data, "dimension", where)
    name = identifier(_text(data.get("name"), where), f"{where}: name")
    return Dimension(name, identifier(_text(data.get("entity"), where), f"{where}: entity"), _text(data.get("expr"), where, name),
                     _text(data.get("label"), where), _words(data.get("synonyms"), f"{where}.synonyms"),
                     bool(data.get("index_values", True)), _text(data.get("description"), where),
                     shown_with=tuple(identifier(w, f"{where}.shown_with") for w in _words(data.get("shown_with"), f"{where}.shown_with")))


def model_from_dict(data: Any, *, default_name: str = "semantic") -> SemanticModel:
    """A checked ``SemanticModel`` from the parsed YAML (module docstring)."""
    data = _mapping(data, "model", "the semantic model")
    saved = []
    for i, raw in enumerate(_list(data.get("saved_queries"), "saved_queries")):
        item = _mapping(raw, "saved", f"saved_queries[{i}]")
        if not isinstance(item.get("query"), Mapping) or not _text(item.get("question"), f"saved_queries[{i}]"):
            raise SemanticModelError(f"saved_queries[{i}]: a question and a query (metrics, by, where ...)")
        saved.append(SavedQuery(_text(item.get("question"), f"saved_queries[{i}]"), dict(item["query"])))
    model = SemanticModel(
        name=_text(data.get("name") or data.get("semantic_model"), "name", default_name),
        entities=tuple(_entity(e, i) for i, e in enumerate(_list(data.get("entities"), "entities"))),
        measures=tuple(_measure(m, i) for i, m in enumerate(_list(data.get("measures"), "measures"))),
        metrics=tuple(_metric(m, i) for i, m in enumerate(_list(data.get("metrics"), "metrics"))),
        dimensions=tuple(_dimension(d, i) for i, d in enumerate(_list(data.get("dimensions"), "dimensions"))),
        saved_queries=tuple(saved),
        time_synonyms=_words(data.get("time_synonyms"), "time_synonyms"),
        description=_text(data.get("description"), "description"),
    )
    validate(model)
    return model


def load_native(path: str | Path) -> SemanticModel:
    return model_from_dict(read_yaml(path), default_name=Path(path).stem)


def _unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SemanticModelError(f"{what} {name!r} is defined twice")
        seen.add(name)


def validate(model: SemanticModel) -> None:
    """``SemanticModelError`` unless every reference resolves and every expression is allowed."""
    if not model.metrics:
        raise SemanticModelError("the semantic model defines no metric")
    _unique([e.name for e in model.entities], "entity")
    _unique([m.name for m in model.measures], "measure")
    _unique([m.name for m in model.metrics] + [d.name for d in model.dimensions] + [TIME], "metric or dimension")
    entities = {e.name for e in model.entities}
    for entity in model.entities:
        for join in entity.joins:
            if join.to not in entities:
                raise SemanticModelError(f"entity {entity.name!r} joins {join.to!r}, which is no entity")
    for entity in model.entities:
        holder = entity.time.entity if entity.time is not None else None
        if holder is not None and (holder not in entities or model.path(entity.name, holder) is None):
            raise SemanticModelError(f"entity {entity.name!r}: its time is on {holder!r}, which is no entity its joins reach")
    for measure in model.measures:
        if measure.entity not in entities:
            raise SemanticModelError(f"measure {measure.name!r} is on entity {measure.entity!r}, which is no entity")
        columns_of(measure.expr, f"measure {measure.name}")
        if measure.filter:
            for name in dimensions_of(measure.filter, f"measure {measure.name} filter"):
                if not model.has_dimension(name) or name == TIME or not model.reachable(measure.name, name):
                    raise SemanticModelError(f"measure {measure.name!r}: its filter's dimension {name!r} is no dimension "
                                             "its entity reaches")
    measures = {m.name for m in model.measures}
    for metric in model.metrics:
        if metric.type == "simple" and metric.measure not in measures:
            raise SemanticModelError(f"metric {metric.name!r} needs a measure (has: {', '.join(sorted(measures))})")
        if metric.type == "ratio":
            for part in (metric.numerator, metric.denominator):
                if part is None or not model.has_metric(part):
                    raise SemanticModelError(f"ratio metric {metric.name!r}: numerator and denominator are metrics")
        if metric.type == "derived":
            if not metric.expr:
                raise SemanticModelError(f"derived metric {metric.name!r} needs an expr over other metrics")
            metric_references(metric.expr, model)
    for metric in model.metrics:
        model.measures_of(metric.name)  # raises on a cycle
    for dimension in model.dimensions:
        if dimension.entity not in entities:
            raise SemanticModelError(f"dimension {dimension.name!r} is on entity {dimension.entity!r}, which is no entity")
        columns_of(dimension.expr, f"dimension {dimension.name}")
        for other in dimension.shown_with:  # a label shown with its key: two customers of one name stay two rows
            if other == dimension.name or not model.has_dimension(other) or other == TIME:
                raise SemanticModelError(f"dimension {dimension.name!r}: shown_with {other!r} is no other dimension")
    for saved in model.saved_queries:
        from baton.semantic.query import SemanticQuery

        SemanticQuery.from_dict(saved.query).check(model)


__all__ = ["load_native", "model_from_dict", "read_yaml", "validate"]
