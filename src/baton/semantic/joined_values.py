"""A query with no metric over dimensions of several semantic models: their rows FULL OUTER JOINed.

MetricFlow answers ``mf query --group-by user__home_state_latest,listing__is_lux_latest`` from
the semantic model that reaches the others (listings, whose ``user`` is the users' primary
entity), joined to each of them with a FULL OUTER JOIN on that entity, then filtered and grouped:
a user with no listing is a row too (its listing's dimensions NULL), as is a listing whose user
is unknown. Baton reads the same (``SELECT ... FROM listings FULL OUTER JOIN users ON ... WHERE
... GROUP BY ...``) when exactly one of the models holding the dimensions (an entity's key on its
own rows counts) reaches every other, each in one join. Refused by name: no such model or more
than one (MetricFlow starts from the one it ranks first, by how few elements it has: which one
decides the rows), a path of several joins, a slowly changing dimension (no measure time to
pick its row by), a time group-by beside them, and MySQL/MariaDB (no FULL OUTER JOIN).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from baton.semantic.expressions import parse_fragment
from baton.semantic.model import Join, SemanticModel
from baton.semantic.query import SemanticQueryError

if TYPE_CHECKING:
    from sqlglot import exp

_WHAT = "a query with no metric over dimensions of several semantic models"


def _base(model: SemanticModel, names: Sequence[str]) -> tuple[str, dict[str, Join]]:
    """The one semantic model holding some of ``names`` (as its own, or an entity's key on its rows)
    that reaches every other's, and those joins by the entity joined (one join each)."""
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
            if route is None:
                break
            routes[dimension.entity] = route
        else:
            found.append((base, routes))
    if len(found) != 1 or any(len(route) != 1 for route in found[0][1].values()):
        shape = "none" if not found else "more than one" if len(found) > 1 else "only through several joins one"
        raise SemanticQueryError(f"{_WHAT} where {shape} of them reaches the others, which Baton does not compute yet "
                                 "(MetricFlow joins them FULL OUTER from the one it ranks first)")
    base, routes = found[0]
    joins = {entity: route[0][1] for entity, route in routes.items()}
    if any(join.validity for join in joins.values()):
        raise SemanticQueryError(f"{_WHAT}, one a slowly changing dimension (SCD validity_params), which Baton does not "
                                 "compute yet")
    return base, joins


def one_holder(model: SemanticModel, names: Sequence[str]) -> None:
    """Refuses, by name, dimensions of one semantic model that another holds too (an entity's key on
    its rows): MetricFlow reads them from the one with the fewest elements (``--group-by listing``:
    the listing mapping, not the listings), which Baton does not rank."""
    homes = {model.dimension(n).entity for n in names}
    holders = homes | {holder for n in names for holder, _ in model.dimension(n).local}
    if len(homes) == 1 and any(all(model.dimension(n).entity == h or model.dimension(n).local_expr(h) is not None
                                    for n in names) for h in holders - homes):
        raise SemanticQueryError("a query with no metric over an entity that several semantic models hold, which Baton "
                                 "does not compute yet (MetricFlow reads it from the one with the fewest elements)")


def joined_rows(model: SemanticModel, names: Sequence[str], dialect: str) -> tuple[exp.Select, Callable[[str], exp.Expr]]:
    """The FROM of the joined rows (the base table FULL OUTER JOIN the others), and each
    dimension's value on them."""
    from sqlglot import exp

    if dialect == "mysql":
        raise SemanticQueryError(f"{_WHAT} on MySQL/MariaDB, which have no FULL OUTER JOIN (MetricFlow joins them so)")
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


__all__ = ["joined_rows", "one_holder"]
