"""A measure's rows and the entities joined to them: one branch of a compiled query.

A branch reads one entity's table and LEFT JOINs, on demand, the entities that hold what the
query asks for, along the model's join paths (``SemanticModel.path``). Two rules follow
MetricFlow, whose numbers Baton must give:

- **each multi-hop target through its own path**: MetricFlow joins every dimension's semantic
  model through a copy of the path of its own (``bridge ⋈ customers`` and ``bridge ⋈
  customer_data`` are two joins of the bridge). Where the bridge holds a key twice, one
  shared copy would count each pair of rows once, MetricFlow's copies each combination. So the
  first multi-hop target through a first hop uses the branch's shared joins, every other
  target gets copies of its own; a one-hop target (the bridge's own dimension) reads the
  shared copy, as MetricFlow reads it from the first joined path.
- **an entity path** (``SemanticQuery.paths``, MetricFlow's ``listing__user__home_state_latest``)
  that is not the shortest join: that semantic model is reached along the entities named (the
  listing's user, where the booking's own ``user`` reaches the users in one join).
- **slowly changing dimensions** (``Join.validity``, MetricFlow's SCD ``validity_params``):
  the joined row is the one valid at the measure's own time, at day grain —
  ``day >= start AND (day < end OR end IS NULL)`` — as MetricFlow compares its
  ``metric_time__day`` with the window's columns. A measure with no time of its own, one timed
  through a join or stored as text, an offset or cumulative input, and SQLite (dates as text:
  a day and a timestamp do not compare) are refused by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.engine_sql import metric_sql
from baton.semantic.expressions import parse_fragment
from baton.semantic.model import Entity, Join, SemanticModel, TimeColumn
from baton.semantic.query import SemanticQueryError

if TYPE_CHECKING:
    from sqlglot import exp

_SCD = "a slowly changing dimension (SCD validity_params)"


def _on_alias(text: str, alias: str, what: str) -> exp.Expr:
    from sqlglot import exp

    return parse_fragment(text, what).copy().transform(
        lambda n: exp.column(n.name, table=alias) if isinstance(n, exp.Column) and not n.table else n)


class Branch:
    """One (entity, filter, time column) group: its FROM/JOINs, and aliases per join path."""

    def __init__(self, model: SemanticModel, entity: str, time: TimeColumn | None, offset: int = 0, *,
                 cumulative: bool = False, dialect: str = "", paths: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> None:
        self.model = model
        self.root = model.entity(entity)
        self.time = time
        self.offset = offset  # days its time is moved (an offset_window input)
        self.cumulative = cumulative
        self.dialect = dialect
        self.paths = dict(paths)  # semantic model -> the entity path the query reaches it by (SemanticQuery.paths)
        self.aliases: dict[tuple, str] = {}  # (copy, *steps) -> alias; copy "" is the shared one
        self.joins: list[exp.Expr] = []
        self.matched: dict[str, exp.Expr] = {}
        self.used = {self.root.name}
        self.first_target: dict[tuple[str, str], str] = {}  # first hop -> the multi-hop target the shared copy serves

    def table(self, entity: Entity) -> exp.Expr:
        from sqlglot import exp

        return exp.Table(this=exp.to_identifier(entity.table), db=exp.to_identifier(entity.schema) if entity.schema else None)

    def alias_for(self, entity_name: str) -> str:
        """The alias of ``entity_name``'s rows, joining what its path needs (module docstring)."""
        from sqlglot import exp

        via = self.paths.get(entity_name)
        route = self.model.path_via(self.root.name, via, entity_name) if via else self.model.path(self.root.name, entity_name)
        assert route is not None, "checked by SemanticQuery.check and mf_query"
        copy = ""
        if len(route) > 1:
            first = (route[0][0].name, route[0][1].to)
            if self.first_target.setdefault(first, entity_name) != entity_name:
                copy = entity_name
        parent = self.root.name
        key: tuple = (copy,)
        for source, join in route:
            key = (*key, (source.name, join.to))
            if key in self.aliases:
                parent = self.aliases[key]
                continue
            target = self.model.entity(join.to)
            alias = target.name if target.name not in self.used else f"{target.name}_{len(self.used)}"
            self.used.add(alias)
            self.aliases[key] = alias
            on: list[exp.Expr] = [exp.EQ(this=exp.column(remote, table=alias), expression=exp.column(local, table=parent))
                  for local, remote in join.on]
            if join.validity is not None:
                on.append(self._valid_at_time(join, alias))
            self.matched[alias] = exp.column(join.on[0][1], table=alias)  # NULL where the LEFT JOIN found no row
            self.joins.append(exp.Join(this=exp.alias_(self.table(target), alias, table=True), kind=None, side="LEFT",
                                       on=exp.and_(*on)))
            parent = alias
        return parent

    def _valid_at_time(self, join: Join, alias: str) -> exp.Expr:
        """The SCD row valid at the measure's day: ``day >= start AND (day < end OR end IS NULL)``."""
        from sqlglot import exp

        time = self.time
        if time is None or time.entity is not None or time.format != "native":
            raise SemanticQueryError(f"{_SCD} joined to rows without a date or timestamp column of their own, which "
                                     "Baton does not compute (MetricFlow keeps the row valid at the measure's time)")
        if self.offset or self.cumulative:
            raise SemanticQueryError(f"{_SCD} under an offset or cumulative metric, which Baton does not compute yet")
        if self.dialect and not metric_sql(self.dialect).typed_dates:  # no dialect (a conversion's branches): not asked
            raise SemanticQueryError(f"{_SCD} on SQLite (dates kept as text: a day and a timestamp do not compare)")
        assert join.validity is not None
        day = exp.Cast(this=_on_alias(time.column, self.root.name, "time column"), to=exp.DataType.build("DATE"))
        start = _on_alias(join.validity[0], alias, "validity start")
        end = _on_alias(join.validity[1], alias, "validity end")
        before_end = exp.or_(exp.LT(this=day.copy(), expression=end), exp.Is(this=end.copy(), expression=exp.Null()))
        return exp.and_(exp.GTE(this=day, expression=start), exp.Paren(this=before_end))

    def source(self) -> exp.Expr:
        from sqlglot import exp

        return exp.alias_(self.table(self.root), self.root.name, table=True)


__all__ = ["Branch"]
