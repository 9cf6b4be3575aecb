"""A query with no metric read where MetricFlow reads it: over several semantic models, FULL OUTER JOINed.

MetricFlow answers ``mf query --group-by user__home_state_latest,listing__is_lux_latest`` from
the semantic model that reaches the others (listings, whose ``user`` is the users' primary
entity), joined to each of them with a FULL OUTER JOIN on that entity, then filtered and grouped:
a user with no listing is a row too (its listing's dimensions NULL), as is a listing whose user
is unknown. It starts from the candidate (a model holding some of the dimensions, an entity's key
on its own rows included) with the fewest joins, then the fewest group-by elements
(``mf_ranking.py``): ``--group-by listing`` reads the listing mapping, not the listings. Baton
reads the same where that candidate is clearly first (``one_holder``, ``joined_rows``), and a
``Metric(...)`` filter as MetricFlow does, the metric FULL OUTER JOINed by its dimension
(``metric_filtered``). Refused by name: candidates ranked too close to tell, a dimension reached
only through several joins or on another entity than the one it is named by, a slowly changing
dimension (no measure time to pick its row by), a time group-by beside several models, several
Metric filters, and an engine without FULL OUTER JOIN (MySQL/MariaDB: ``MetricSQL.full_outer_join``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from baton.semantic.engine_sql import engine_title, metric_sql
from baton.semantic.expressions import parse_fragment
from baton.semantic.model import Join, SemanticModel
from baton.semantic.query import SemanticQuery, SemanticQueryError

if TYPE_CHECKING:
    from sqlglot import exp

_WHAT = "a query with no metric over dimensions of several semantic models"


def _base(model: SemanticModel, names: Sequence[str]) -> tuple[str, dict[str, Join]]:
    """The semantic model holding some of ``names`` (as its own, or an entity's key on its rows) that
    reaches every other's in one join on the entity it is named by, as MetricFlow picks it (the
    fewest joins, then the fewest elements), and those joins by the semantic model joined."""
    candidates = sorted({model.dimension(n).entity for n in names}
                        | {holder for n in names for holder, _ in model.dimension(n).local})
    found: list[tuple[str, dict[str, tuple[tuple, ...]]]] = []
    for base in candidates:
        routes: dict[str, tuple[tuple, ...]] = {}
        for name in names:
            dimension = model.dimension(name)
            if dimension.entity == base or dimension.local_expr(base) is not None:
                continue
            route = model.path(base, dimension.entity)
            prefixes = {q.split("__")[0] for q in dimension.qualified if q.count("__") == 1 and dimension.qualified[0] != name}
            if route is None or len(route) != 1 or not prefixes <= {route[0][1].entity}:  # the entity it is named by
                break
            routes[dimension.entity] = route
        else:
            found.append((base, routes))
    if not found:
        raise SemanticQueryError(f"{_WHAT} where none of them reaches the others, which Baton does not compute yet")
    fewest = min(len(routes) for _, routes in found)
    ranked = {base: routes for base, routes in found if len(routes) == fewest}
    base = _first_ranked(model, sorted(ranked), "dimensions of several semantic models")
    routes = ranked[base]
    joins = {entity: route[0][1] for entity, route in routes.items()}
    if any(join.validity for join in joins.values()):
        raise SemanticQueryError(f"{_WHAT}, one a slowly changing dimension (SCD validity_params), which Baton does not "
                                 "compute yet")
    return base, joins


def _first_ranked(model: SemanticModel, candidates: Sequence[str], what: str) -> str:
    """The candidate MetricFlow ranks first (the fewest elements: ``Entity.elements``), where that is
    beyond doubt; else refused by name."""
    if len(candidates) == 1:
        return candidates[0]
    ranked = sorted(candidates, key=lambda name: model.entity(name).elements)
    best, second = model.entity(ranked[0]).elements, model.entity(ranked[1]).elements
    if best == (0, 0) or 2 * best[1] > second[0]:  # clearly first: at most half the next one's elements
        raise SemanticQueryError(f"{_WHAT.replace('dimensions of several semantic models', what)} where more than "
                                 "one of them reaches the others, which Baton does not compute yet (MetricFlow joins "
                                 "them FULL OUTER from the one it ranks first)")
    return ranked[0]


def one_holder(model: SemanticModel, names: Sequence[str], entity: str, pinned: bool) -> str:
    """The semantic model a query with no metric over ``names`` (all of ``entity``'s) reads: where
    another holds them all too (an entity's key on its rows: ``--group-by listing``), the one
    MetricFlow ranks first (the listing mapping, not the listings); ``pinned`` (a time dimension of
    ``entity`` beside them): ``entity`` or refused."""
    holders = sorted({entity} | {holder for n in names for holder, _ in model.dimension(n).local})
    holders = [h for h in holders if all(model.dimension(n).entity == h or model.dimension(n).local_expr(h) is not None
                                         for n in names)]
    chosen = _first_ranked(model, holders, "an entity several semantic models hold")
    if pinned and chosen != entity:
        raise SemanticQueryError("a query with no metric over an entity several semantic models hold beside a time "
                                 "dimension, which Baton does not compute yet")
    return chosen


def joined_rows(model: SemanticModel, names: Sequence[str], dialect: str) -> tuple[exp.Select, Callable[[str], exp.Expr]]:
    """The FROM of the joined rows (the base table FULL OUTER JOIN the others), and each
    dimension's value on them."""
    from sqlglot import exp

    if not metric_sql(dialect).full_outer_join:
        raise SemanticQueryError(f"{_WHAT} on {engine_title(dialect)}, which have no FULL OUTER JOIN (MetricFlow joins them so)")
    base, joins = _base(model, names)

    def table(name: str) -> exp.Expr:
        entity = model.entity(name)
        found = exp.Table(this=exp.to_identifier(entity.table), db=exp.to_identifier(entity.schema) if entity.schema else None)
        return exp.alias_(found, name, table=True)

    source = exp.Select().from_(table(base), copy=False)
    for name, join in joins.items():
        on = exp.and_(*(exp.EQ(this=exp.column(local, table=base), expression=exp.column(remote, table=name))
                        for local, remote in join.on))
        source = source.join(exp.Join(this=table(name), side="FULL", kind="OUTER", on=on), copy=False)

    def value(name: str) -> exp.Expr:
        dimension = model.dimension(name)
        local = dimension.local_expr(base) if dimension.entity != base else None
        alias = base if dimension.entity == base or local is not None else dimension.entity
        tree = parse_fragment(local or dimension.expr, f"dimension {name}").copy()
        return tree.transform(lambda n: exp.column(n.name, table=alias) if isinstance(n, exp.Column) and not n.table else n)

    return source, value


def metric_filtered(q: SemanticQuery, select: exp.Select, value: Callable[[str], exp.Expr], conditions: list[exp.Expr],
                    dialect: str, inner: Callable[[SemanticQuery], Any] | None) -> exp.Select:
    """``{{ Metric('bookings', group_by=['listing']) }} > 2`` in a query with no metric: the rows
    FULL OUTER JOINed to the metric by that dimension (``inner`` compiles it), kept where it
    compares (``conditions`` gets the comparison), as MetricFlow: a listing with such bookings that
    the rows lack is a NULL row."""
    import sqlglot
    from sqlglot import exp

    if not metric_sql(dialect).full_outer_join:
        raise SemanticQueryError(f"a query with no metric filtered by a Metric(...) on {engine_title(dialect)}, which have no FULL "
                                 "OUTER JOIN (MetricFlow joins the metric so)")
    if inner is None or len(q.metric_filters) != 1:
        raise SemanticQueryError("a query with no metric filtered by several Metric(...) filters, which Baton does not "
                                 "compute yet")
    metric, dimension, operator, number = q.metric_filters[0]
    compiled = inner(SemanticQuery((metric,), (dimension,)))
    tree = sqlglot.parse_one(compiled.sql, read=dialect)
    assert isinstance(tree, exp.Select)  # compiled from the model
    tree.set("order", None)
    on = exp.EQ(this=value(dimension), expression=exp.column(compiled.columns[0], table="baton_metric"))
    joined = exp.Join(this=exp.alias_(exp.Subquery(this=tree), "baton_metric", table=True), side="FULL", kind="OUTER", on=on)
    comparison = sqlglot.parse_one(f"baton_value {operator} {float(number)!r}", read=dialect)
    conditions.append(comparison.transform(
        lambda n: exp.column(metric, table="baton_metric") if isinstance(n, exp.Column) else n))
    return select.join(joined, copy=False)


__all__ = ["joined_rows", "metric_filtered", "one_holder"]
