"""MetricFlow's semantic models as Baton's entities, measures and dimensions (``metricflow.py``
says how they map and what is refused; ``mf_metrics.py`` builds the metrics on top)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baton.semantic.errors import SemanticModelError
from baton.semantic.expressions import is_identifier, parse_fragment
from baton.semantic.mf_entity_names import entity_prefixed_names
from baton.semantic.mf_project import MetricFlowProject, where
from baton.semantic.mf_ranking import element_count
from baton.semantic.mf_scd import scd_window
from baton.semantic.model import GRAINS, Dimension, Entity, Join, Measure, Refusal, TimeColumn
from baton.semantic.percentile import is_percentile, percentile_agg

_REF = re.compile(r"""^\s*ref\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*(?:,\s*v(?:ersion)?\s*=\s*\d+\s*)?\)\s*$""")
_AGGS = {"sum": "sum", "count": "count", "count_distinct": "count_distinct", "min": "min", "max": "max",
         "average": "avg", "avg": "avg", "sum_boolean": "sum"}
_NAME_DIMENSIONS = ("name", "full_name", "display_name", "label", "title")
JOINABLE = ("primary", "unique", "natural")


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (a YAML field may hold anything)."""
    return value if isinstance(value, Mapping) else {}


def window_parts(window: object) -> tuple[int, str] | None:
    """A MetricFlow window as (count, unit): ``7 days`` / ``1 week`` as a project writes it, or
    ``{count: 7, granularity: day}`` as a ``semantic_manifest.json`` does; None when it is neither."""
    if isinstance(window, Mapping):
        count, unit = window.get("count"), str(window.get("granularity") or "")
    else:
        parts = str(window).split()
        count, unit = (parts[0], parts[1]) if len(parts) == 2 else (None, "")
    if isinstance(count, bool) or not str(count).isdigit() or not unit:
        return None
    return int(str(count)), unit.lower().rstrip("s")


def meta(node: Mapping) -> Mapping:
    found = mapping(node.get("config")).get("meta")
    return found if isinstance(found, Mapping) else mapping(node.get("meta"))


def synonyms(node: Mapping) -> tuple[str, ...]:
    found = meta(node).get("synonyms") or ()
    if not isinstance(found, (list, tuple)) or any(not isinstance(s, str) for s in found):
        raise SemanticModelError(f"{where(node)}: {node.get('name')!r}: meta.synonyms is a list of strings")
    return tuple(found)


def _expr(node: Mapping, default: str) -> str:
    value = node.get("expr")
    if value is None:
        return default
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return str(value).strip()


@dataclass
class SemanticModelInfo:
    """One semantic model as read: its entity names, dimensions and time columns."""

    name: str
    node: Mapping
    own: list[str] = field(default_factory=list)  # its primary/unique/natural entity names (and primary_entity)
    keys: dict[str, str] = field(default_factory=dict)  # entity name -> key expression (every entity it has)
    categorical: dict[str, str] = field(default_factory=dict)  # dimension -> expr
    times: dict[str, TimeColumn | str] = field(default_factory=dict)  # time dimension -> column, or why it is not read
    hidden: set[str] = field(default_factory=set)
    scd: str = ""  # where validity_params are declared: its dimensions are refused
    partitions: dict[str, str] = field(default_factory=dict)  # is_partition time dimension -> expr


@dataclass
class Reading:
    """What the reader knows while it builds the model (shared by ``mf_metrics``)."""

    models: dict[str, SemanticModelInfo] = field(default_factory=dict)
    measures: dict[str, Measure] = field(default_factory=dict)
    measure_refused: dict[str, str] = field(default_factory=dict)  # measure -> construct
    measure_node: dict[str, Mapping] = field(default_factory=dict)
    dimensions: dict[str, Dimension] = field(default_factory=dict)
    by_qualified: dict[str, str] = field(default_factory=dict)  # "customer__country" -> Baton dimension name
    refused: list[Refusal] = field(default_factory=list)

    def dimension_named(self, path: tuple[str, ...]) -> tuple[SemanticModelInfo, str] | None:
        """The semantic model and dimension a MetricFlow element path names (its last entity hop
        and the dimension: ``('customer', 'country', 'region')`` -> region of the model whose
        own entity is ``country``)."""
        if len(path) < 2:
            return None
        entity, name = path[-2], path[-1]
        for info in self.models.values():
            if entity in info.own and (name in info.categorical or name in info.times or name in info.hidden):
                return info, name
        return None


def _table(node: Mapping) -> tuple[str, str | None]:
    relation = node.get("node_relation")
    if isinstance(relation, Mapping) and relation.get("alias"):
        schema = relation.get("schema_name")
        return str(relation["alias"]), (str(schema) if schema and not str(schema).startswith("$") else None)
    m = _REF.match(str(node.get("model") or ""))
    if not m:
        raise SemanticModelError(f"{where(node)}: semantic model {node.get('name')!r}: model must be ref('table') "
                                 "(or node_relation)")
    return m.group(1), None


def _time_column(dim: Mapping, place: str) -> TimeColumn | str:
    fmt = str(meta(dim).get("baton_time_format") or "native")
    if fmt not in ("month", "date", "timestamp", "native"):
        raise SemanticModelError(f"{place}: baton_time_format {fmt!r} is not month, date, timestamp or native")
    expr = _expr(dim, str(dim.get("name") or ""))
    try:
        parse_fragment(expr, f"time dimension {dim.get('name')}")
    except SemanticModelError as exc:
        return f"a time expression Baton does not read ({exc})"
    params = dim.get("type_params")
    grain = str(params.get("time_granularity") or "").lower() if isinstance(params, Mapping) else ""
    return TimeColumn(expr, fmt, grain=grain if grain in GRAINS else None)


def _read_semantic_model(node: Mapping, reading: Reading) -> SemanticModelInfo:
    name = str(node.get("name") or "")
    info = SemanticModelInfo(name, node)
    for entity in node.get("entities") or []:
        entity_name = str(entity.get("name") or "")
        info.keys[entity_name] = _expr(entity, entity_name)
        if str(entity.get("type") or "").lower() in JOINABLE:
            info.own.append(entity_name)
    if node.get("primary_entity") and str(node["primary_entity"]) not in info.own:
        info.own.append(str(node["primary_entity"]))
    for dim in node.get("dimensions") or []:
        dim_name = str(dim.get("name") or "")
        if mapping(dim.get("type_params")).get("validity_params"):
            info.scd = where(dim, where(node))
        if str(dim.get("type") or "").lower() == "time":
            info.times[dim_name] = _time_column(dim, where(dim, where(node)))
            if dim.get("is_partition"):
                info.partitions[dim_name] = _expr(dim, dim_name)
        elif meta(dim).get("hidden"):
            info.hidden.add(dim_name)
            info.categorical[dim_name] = _expr(dim, dim_name)
        else:
            info.categorical[dim_name] = _expr(dim, dim_name)
    return info


def _joins(info: SemanticModelInfo, reading: Reading) -> tuple[Join, ...]:
    joins = []
    for entity, local in info.keys.items():
        for other in reading.models.values():
            if other.name == info.name or entity not in other.own or (other.scd and not scd_window(other.node)):
                continue
            remote = other.keys.get(entity)
            if remote and is_identifier(local) and is_identifier(remote):
                # partitions of one name on both sides join too, as MetricFlow joins them (a user's row of that day)
                both = [(info.partitions[p], other.partitions[p]) for p in info.partitions if p in other.partitions]
                if all(is_identifier(a) and is_identifier(b) for a, b in both):
                    joins.append(Join(other.name, ((local, remote), *both), scd_window(other.node) if other.scd else None,
                                      entity))
    return tuple(joins)


def _categorical_dimensions(reading: Reading, metric_names: set[str]) -> None:
    """Every categorical dimension, named as the module docstring says."""
    counts: dict[str, int] = {}
    for info in reading.models.values():
        for dim in info.categorical:
            if dim not in info.hidden:
                counts[dim] = counts.get(dim, 0) + 1
    for info in reading.models.values():
        nodes = {str(d.get("name")): d for d in info.node.get("dimensions") or []}
        for dim, expr in info.categorical.items():
            if dim in info.hidden:
                continue
            node = nodes[dim]
            prefix = info.own[0] if info.own else info.name
            name = dim if counts[dim] == 1 and dim not in metric_names else f"{prefix}__{dim}"
            if name in reading.dimensions or name in metric_names:
                name = f"{info.name}__{dim}"
            qualified = tuple(f"{entity}__{dim}" for entity in info.own)
            if info.scd and not scd_window(info.node):  # mf_scd.py: a window it reads is joined (joins.py)
                reading.refused.append(Refusal(name, "dimension", "a slowly changing dimension (SCD validity_params)",
                                               info.scd, tuple(w for w in (str(node.get("label") or ""),) if w)))
                continue
            try:
                parse_fragment(expr, f"dimension {dim}")
            except SemanticModelError as exc:
                reading.refused.append(Refusal(name, "dimension", f"an expression Baton does not read ({exc})", where(node)))
                continue
            reading.dimensions[name] = Dimension(name, info.name, expr, str(node.get("label") or dim.replace("_", " ")),
                                                 synonyms(node), description=str(node.get("description") or ""),
                                                 qualified=qualified, meta=dict(meta(node)))
            for q in qualified:
                reading.by_qualified.setdefault(q, name)


def _entity_dimensions(reading: Reading, metric_names: set[str]) -> None:
    """An entity as a dimension: its key, read where the measure's own table holds it."""
    for info in reading.models.values():
        for entity in info.own:
            if entity in reading.dimensions or entity in metric_names or info.scd or entity not in info.keys:
                continue
            key = info.keys[entity]
            try:
                parse_fragment(key, f"entity {entity}")
            except SemanticModelError:
                continue
            shown = tuple(reading.by_qualified[f"{entity}__{n}"] for n in (*_NAME_DIMENSIONS, f"{entity}_name")
                          if f"{entity}__{n}" in reading.by_qualified and reading.dimensions[reading.by_qualified[f"{entity}__{n}"]].entity == info.name)
            local = _holders(reading, entity, info.name)
            node: Mapping = next((e for e in info.node.get("entities") or [] if str(e.get("name")) == entity), {})
            reading.dimensions[entity] = Dimension(entity, info.name, key, str(node.get("label") or entity.replace("_", " ")),
                                                   synonyms(node), index_values=False,
                                                   description=str(node.get("description") or ""), qualified=(entity,),
                                                   shown_with=shown[:1], local=local)
            reading.by_qualified.setdefault(entity, entity)
    owned = {e for info in reading.models.values() for e in info.own}
    for info in reading.models.values():  # a foreign entity no semantic model owns: its key on the rows that hold it
        for entity, key in info.keys.items():
            if entity in owned or entity in reading.dimensions or entity in metric_names or not is_identifier(key):
                continue
            local = _holders(reading, entity, info.name)
            reading.dimensions[entity] = Dimension(entity, info.name, key, entity.replace("_", " "), index_values=False,
                                                   qualified=(entity,), local=local)
            reading.by_qualified.setdefault(entity, entity)


def _holders(reading: Reading, entity: str, home: str) -> tuple[tuple[str, str], ...]:
    """The other semantic models whose own rows hold ``entity``'s key as a plain column: there it
    is read without a join (``Dimension.local``)."""
    return tuple((other.name, other.keys[entity]) for other in reading.models.values()
                 if other.name != home and entity in other.keys and is_identifier(other.keys[entity]))


def _measures(info: SemanticModelInfo, reading: Reading) -> None:
    defaults = mapping(info.node.get("defaults"))
    default_time = defaults.get("agg_time_dimension")
    for node in info.node.get("measures") or []:
        name = str(node.get("name") or "")
        agg = str(node.get("agg") or "").lower()
        reading.measure_node[name] = node
        if name in reading.measures or name in reading.measure_refused:
            raise SemanticModelError(f"{where(node)}: measure {name!r} is defined twice")
        time_name = node.get("agg_time_dimension") or default_time
        time: TimeColumn | str | None = info.times.get(str(time_name)) if time_name else None
        if time_name and str(time_name) not in info.times:
            raise SemanticModelError(f"{where(node)}: measure {name!r}: agg_time_dimension {time_name!r} is no time "
                                     f"dimension of {info.name}")
        construct = ""
        if agg in ("percentile", "median"):  # percentile.py: "percentile:0.99" as the measure's agg
            try:
                agg = percentile_agg(agg, mapping(node.get("agg_params")))
            except ValueError as exc:
                construct = str(exc)
        if not construct and node.get("non_additive_dimension"):
            non_additive = _non_additive(mapping(node["non_additive_dimension"]), info)
            if isinstance(non_additive, str):
                construct = non_additive
        elif not construct and isinstance(time, str):
            construct = time
        expr = _expr(node, name)
        if agg == "sum_boolean":
            expr = f"CASE WHEN ({expr}) THEN 1 ELSE 0 END"
        if not construct:
            try:
                parse_fragment(expr, f"measure {name}")
            except SemanticModelError as exc:
                construct = f"an expression Baton does not read ({exc})"
        if construct:
            reading.measure_refused[name] = construct
            continue
        entity_time = info.times.get(str(default_time)) if default_time else None
        own_time = time if isinstance(time, TimeColumn) and time != entity_time else None
        semi = _non_additive(mapping(node["non_additive_dimension"]), info) if node.get("non_additive_dimension") else None
        reading.measures[name] = Measure(name, info.name, agg if is_percentile(agg) else _AGGS[agg], expr, description=str(node.get("description") or ""),
                                         time=own_time, non_additive=semi if isinstance(semi, tuple) else None)


def _non_additive(spec: Mapping, info: SemanticModelInfo) -> tuple[str, str, tuple[str, ...]] | str:
    """A ``non_additive_dimension`` as ``Measure.non_additive``, or the construct refused."""
    refused = "non_additive_dimension (a semi-additive measure: balances that must not be summed over time)"
    time = info.times.get(str(spec.get("name") or ""))
    choice = str(spec.get("window_choice") or "min").lower()
    keys = [info.keys.get(str(g)) for g in spec.get("window_groupings") or []]
    if not isinstance(time, TimeColumn) or time.format != "native" or not is_identifier(time.column) \
            or choice not in ("min", "max") or not all(k and is_identifier(k) for k in keys):
        return refused + " on a column Baton does not read"
    return time.column, choice, tuple(k for k in keys if k)


def read_models(project: MetricFlowProject, metric_names: set[str]) -> tuple[Reading, list[Entity]]:
    """Entities, measures and dimensions of every semantic model (module docstring)."""
    reading = Reading()
    for node in project.semantic_models:
        info = _read_semantic_model(node, reading)
        if info.name in reading.models:
            raise SemanticModelError(f"{where(node)}: semantic model {info.name!r} is defined twice")
        reading.models[info.name] = info
    entities = []
    for info in reading.models.values():
        table, schema = _table(info.node)
        default_time = mapping(info.node.get("defaults")).get("agg_time_dimension")
        time = info.times.get(str(default_time)) if default_time else None  # no default: no guess among its time dimensions
        entities.append(Entity(info.name, table, schema, time if isinstance(time, TimeColumn) else None,
                               _joins(info, reading), synonyms(info.node), str(info.node.get("description") or ""),
                               element_count(info.node)))  # mf_ranking.py
        _measures(info, reading)
    _categorical_dimensions(reading, metric_names)
    _entity_dimensions(reading, metric_names)
    entity_prefixed_names(reading)  # mf_entity_names.py: listing__lux_listing
    return reading, entities


__all__ = ["Reading", "SemanticModelInfo", "mapping", "meta", "read_models", "synonyms"]
