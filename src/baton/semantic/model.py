"""The semantic model: entities and joins, measures, metrics, dimensions, synonyms.

A model is plain data (frozen dataclasses), built by a reader (``native.py`` for Baton's
YAML, ``metricflow.py`` for dbt MetricFlow's) and checked once by ``validate`` before
anything is compiled from it:

- **entity**: one table (``table``, optionally ``schema``), its time column (``time``:
  the column, how it is stored — ``month`` text ``YYYY-MM``, ``date`` text ``YYYY-MM-DD``,
  ``timestamp`` text ``YYYY-MM-DD HH:MM:SS``, or ``native`` DATE/TIMESTAMP — and so the
  finest grain it has; ``entity``: another entity's column, reached through the joins — order
  lines counted by their order's date) and its joins to other entities (many-to-one: ``on`` maps a local
  column to the other entity's column);
- **measure**: an aggregation (``sum``, ``count``, ``count_distinct``, ``avg``, ``min``,
  ``max``) of an expression over one entity's rows, with an optional row filter that is part
  of the measure ("cancelled events never count": ``deleted_at IS NULL``);
- **metric**: ``simple`` (one measure), ``ratio`` (numerator / denominator, both metrics)
  or ``derived`` (an arithmetic expression over other metrics: ``revenue - cost``);
- **dimension**: ``categorical`` (an expression over one entity's columns, reached from a
  measure's entity through joins) or the one time dimension ``time`` (grains day, week,
  month, quarter, year, computed from each measure's own entity time column).

Expressions are SQL fragments the model's author wrote; ``expressions.py`` allows only
columns of their own entity, literals, arithmetic, comparisons, CASE, CAST, COALESCE and
a few pure functions, so a model can never read another table or call anything with an
effect, and every compiled query still passes the workspace's safety check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from baton.semantic.errors import SemanticModelError
from baton.semantic.expressions import metric_references

AGGREGATIONS = ("sum", "count", "count_distinct", "avg", "min", "max")
METRIC_TYPES = ("simple", "ratio", "derived")
TIME_FORMATS = {"month": "month", "date": "day", "timestamp": "day", "native": "day"}  # format -> finest grain
GRAINS = ("day", "week", "month", "quarter", "year")
TIME = "time"  # the name of the time dimension in queries


@dataclass(frozen=True, slots=True)
class Join:
    to: str
    on: tuple[tuple[str, str], ...]  # (local column, other entity's column)
    # a slowly changing dimension (MetricFlow's validity_params): (start, end) expressions on the other entity's rows;
    # the joined row is the one valid at the measure's time (joins.py)
    validity: tuple[str, str] | None = None
    entity: str = ""  # the MetricFlow entity it joins on (``listing``): an entity path (``listing__user__x``) follows it


@dataclass(frozen=True, slots=True)
class TimeColumn:
    column: str
    format: str = "date"  # month | date | timestamp | native
    entity: str | None = None  # the entity whose column it is, reached through joins (an order line dated by its order)
    grain: str | None = None  # the grain it is declared at (MetricFlow's time_granularity: month): none finer is read

    @property
    def finest(self) -> str:
        stored = TIME_FORMATS[self.format]
        if self.grain in GRAINS and GRAINS.index(self.grain) > GRAINS.index(stored):
            return self.grain
        return stored


@dataclass(frozen=True, slots=True)
class Entity:
    name: str
    table: str
    schema: str | None = None
    time: TimeColumn | None = None
    joins: tuple[Join, ...] = ()
    synonyms: tuple[str, ...] = ()
    description: str = ""
    # how many group-by elements MetricFlow lists for it, (fewest, most) (mf_ranking.py): which of the semantic models
    # holding a query's dimensions it reads a query with no metric from; (0, 0): not known
    elements: tuple[int, int] = (0, 0)


@dataclass(frozen=True, slots=True)
class Measure:
    name: str
    entity: str
    agg: str
    expr: str = "1"
    filter: str | None = None  # may name dimensions of joined entities as ``dimension.<name>``
    description: str = ""
    time: TimeColumn | None = None  # its own time column, when not its entity's (MetricFlow's agg_time_dimension)
    # semi-additive (MetricFlow's non_additive_dimension): only the rows at the (time column's) min or max, per the
    # key columns and the query's metric-time period: (time column, "min" | "max", key columns)
    non_additive: tuple[str, str, tuple[str, ...]] | None = None
    # MetricFlow metric filters of its metric: only the rows whose dimension value has the metric beyond the number,
    # (metric, dimension, operator, number) as SemanticQuery.metric_filters (a metric's Metric(...) filter)
    metric_filters: tuple[tuple[str, str, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    type: str = "simple"
    measure: str | None = None  # simple
    numerator: str | None = None  # ratio: metric names
    denominator: str | None = None
    expr: str | None = None  # derived: over metric names
    label: str = ""
    synonyms: tuple[str, ...] = ()
    decimals: int = 2  # places its value shows in an answer's text (baton.numbers); results stay exact
    description: str = ""
    meta: Mapping = field(default_factory=dict, compare=False, hash=False)  # the source's own (MetricFlow's config.meta)
    fill_nulls: float | None = None  # simple: the value shown where the measure has none (MetricFlow's fill_nulls_with)
    grain: str | None = None  # the grain metric time takes when a MetricFlow query names none (its time_granularity)
    join_to_timespine: bool = False  # simple: a row for every period of the time spine, the value or fill_nulls
    cumulative: str = ""  # simple, MetricFlow's cumulative: "all", "window:2 months" or "to_date:month" (over the spine)
    period_agg: str = "first"  # cumulative: the day's value a coarser period shows ("first", "last" or "average")
    conversion: object | None = None  # simple, over the base measure: a conversion.Conversion (MetricFlow's conversion metric)

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ")


@dataclass(frozen=True, slots=True)
class Dimension:
    name: str
    entity: str
    expr: str
    label: str = ""
    synonyms: tuple[str, ...] = ()
    index_values: bool = True  # its distinct values are indexed for questions ("Epson", "Paris")
    description: str = ""
    qualified: tuple[str, ...] = ()  # other names it answers to in structured queries (MetricFlow's ``customer__country``)
    shown_with: tuple[str, ...] = ()  # dimensions grouped beside it when a question groups by it (an entity's key: its name)
    local: tuple[tuple[str, str], ...] = ()  # (entity, expr): other entities whose own rows hold its value (a foreign key)
    meta: Mapping = field(default_factory=dict, compare=False, hash=False)  # the source's own (MetricFlow's config.meta)

    def local_expr(self, entity: str) -> str | None:
        """Its expression on ``entity``'s own rows, when that entity holds it without a join."""
        return next((expr for name, expr in self.local if name == entity), None)

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ")


@dataclass(frozen=True, slots=True)
class TimeDimension:
    """A time dimension a query may group by besides metric time (MetricFlow's ``listing__ds``,
    ``user__bio_added_ts``): its entity's column, read at a grain or as a date part."""

    name: str
    entity: str
    time: TimeColumn
    qualified: tuple[str, ...] = ()  # the names it answers to (``listing__ds``)
    grain: str = "day"  # its declared time_granularity (may be sub-daily: ``second``): the grain it is read at by default
    partition: bool = False  # MetricFlow's is_partition


@dataclass(frozen=True, slots=True)
class SavedQuery:
    """A question a person checked, as a semantic query (a verified question whose SQL is
    compiled from the model for each engine)."""

    question: str
    query: Mapping = field(default_factory=dict)
    name: str = ""  # the source's own name for it (a MetricFlow saved query's)
    params: Mapping = field(default_factory=dict)  # a MetricFlow saved query's query_params (asked by name: mf_query)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A part of the model Baton reads but does not compute (yet): questions that need it are
    refused by name, never answered without it."""

    name: str  # the metric, dimension or saved query it stops
    kind: str  # metric | dimension | saved query
    construct: str  # what Baton does not compute: "non_additive_dimension (semi-additive measure)" ...
    where: str = ""  # file:line
    words: tuple[str, ...] = ()  # its label and synonyms: a question naming it is refused by name

    @property
    def message(self) -> str:
        return f"The {self.kind} “{self.name}” uses {self.construct}, which Baton does not compute yet"

    @property
    def detail(self) -> str:
        return f"{self.kind} {self.name}: {self.construct}" + (f" ({self.where})" if self.where else "")


@dataclass(frozen=True, slots=True)
class SemanticModel:
    name: str
    entities: tuple[Entity, ...]
    measures: tuple[Measure, ...]
    metrics: tuple[Metric, ...]
    dimensions: tuple[Dimension, ...]
    saved_queries: tuple[SavedQuery, ...] = ()
    time_synonyms: tuple[str, ...] = ()
    description: str = ""
    refused: tuple[Refusal, ...] = ()
    time_spine: tuple[str, str] | None = None  # (table, date column): the project's daily time spine (MetricFlow's)
    custom_grains: tuple[tuple[str, str], ...] = ()  # (name, spine column): its custom granularities (custom_grains.py)
    subdaily_spines: tuple[tuple[str, str, str], ...] = ()  # (grain, table, column): spines finer than a day (subdaily.py)
    # metrics computed as inputs only, never offered (a filtered copy of a ratio's or derived metric's input: MetricFlow's
    # input filter); model.metric() finds them, model.metrics does not list them
    internal_metrics: tuple[Metric, ...] = ()
    time_dimensions: tuple[TimeDimension, ...] = ()  # grouped by as themselves, not as metric time (MetricFlow's)

    def refusal(self, name: str, kind: str | None = None) -> Refusal | None:
        """Why ``name`` (a metric, dimension or saved query of the source) is not computed, if it is not."""
        return next((r for r in self.refused if r.name == name and (kind is None or r.kind == kind)), None)

    def time_of(self, measure: str) -> TimeColumn | None:
        """The time column ``measure`` is counted by: its own, else its entity's."""
        m = self.measure(measure)
        return m.time or self.entity(m.entity).time

    def entity(self, name: str) -> Entity:
        for e in self.entities:
            if e.name == name:
                return e
        raise SemanticModelError(f"no entity {name!r}")

    def measure(self, name: str) -> Measure:
        for m in self.measures:
            if m.name == name:
                return m
        raise SemanticModelError(f"no measure {name!r}")

    def metric(self, name: str) -> Metric:
        for m in (*self.metrics, *self.internal_metrics):
            if m.name == name:
                return m
        raise SemanticModelError(f"no metric {name!r} (has: {', '.join(x.name for x in self.metrics)})")

    def dimension(self, name: str) -> Dimension:
        for d in self.dimensions:
            if d.name == name:
                return d
        raise SemanticModelError(f"no dimension {name!r} (has: {', '.join(x.name for x in self.dimensions)}, time)")

    def has_metric(self, name: str) -> bool:
        return any(m.name == name for m in (*self.metrics, *self.internal_metrics))

    def has_dimension(self, name: str) -> bool:
        return name == TIME or any(d.name == name for d in self.dimensions)

    # --- what a metric is made of --------------------------------------------------------

    def measures_of(self, metric: str, _seen: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """The measures a metric reads, in a stable order (derived metrics recurse)."""
        if metric in _seen:
            raise SemanticModelError(f"metric {metric!r} refers to itself")
        m = self.metric(metric)
        seen = _seen | {metric}
        if m.type == "simple":
            return (m.measure or "",)
        if m.type == "ratio":
            return tuple(dict.fromkeys((*self.measures_of(m.numerator or "", seen), *self.measures_of(m.denominator or "", seen))))
        out: list[str] = []
        for ref in metric_references(m.expr or "", self):
            out.extend(self.measures_of(ref, seen))
        return tuple(dict.fromkeys(out))

    def path_via(self, start: str, entities: tuple[str, ...], goal: str) -> tuple[tuple[Entity, Join], ...] | None:
        """The joins from ``start`` on each of ``entities`` in turn (``Join.entity``: MetricFlow's entity
        path, ``listing__user__...``) that end at ``goal``; None when there are none."""
        if not entities:
            return () if start == goal else None
        for join in self.entity(start).joins:
            if join.entity == entities[0]:
                rest = self.path_via(join.to, entities[1:], goal)
                if rest is not None:
                    return ((self.entity(start), join), *rest)
        return None

    def path(self, start: str, goal: str) -> tuple[tuple[Entity, Join], ...] | None:
        """The joins from entity ``start`` to entity ``goal`` (shortest, many-to-one only);
        ``()`` when they are the same, None when ``goal`` cannot be reached."""
        if start == goal:
            return ()
        frontier: list[tuple[str, tuple[tuple[Entity, Join], ...]]] = [(start, ())]
        seen = {start}
        while frontier:
            nxt = []
            for name, steps in frontier:
                entity = self.entity(name)
                for join in entity.joins:
                    if join.to in seen:
                        continue
                    route = (*steps, (entity, join))
                    if join.to == goal:
                        return route
                    seen.add(join.to)
                    nxt.append((join.to, route))
            frontier = nxt
        return None

    def reachable(self, measure: str, dimension: str) -> bool:
        """Whether ``dimension`` can break down ``measure`` (``time``: the measure's entity
        has a time column)."""
        entity = self.measure(measure).entity
        if dimension == TIME:
            time = self.time_of(measure)
            return time is not None and (time.entity is None or self.path(entity, time.entity) is not None)
        found = self.dimension(dimension)
        return found.local_expr(entity) is not None or self.path(entity, found.entity) is not None

    def finest_grain(self, measures: tuple[str, ...]) -> str | None:
        """The finest time grain every one of ``measures`` has (None: one has no time)."""
        finest = None
        for name in measures:
            time = self.time_of(name)
            if time is None:
                return None
            if finest is None or GRAINS.index(time.finest) > GRAINS.index(finest):
                finest = time.finest
        return finest


__all__ = [
    "AGGREGATIONS", "Dimension", "Entity", "GRAINS", "Join", "METRIC_TYPES", "Measure", "Metric", "Refusal", "SavedQuery",
    "SemanticModel", "TIME", "TimeColumn", "TimeDimension",
]
