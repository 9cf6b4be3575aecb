"""Deterministic rewrites from active learnings, applied to the model's SQL before it runs.

Only rewrites that cannot change what a correct query means are automatic:

- soft delete (``schema_gotcha``/``soft_delete_filter``): every read of the table gets the
  filter, in WHERE for inner reads and in the ON clause when the table is the optional side
  of an outer join (a WHERE there would silently turn the outer join into an inner one);
- schema prefix (``schema_gotcha``/``schema``): unqualified references get the schema;
- performance hint (``performance_hint``): a top-level ``LIMIT row_cap + 1`` when the query
  reads the table and has none: the result is capped at ``row_cap`` rows anyway, and the
  extra row is how truncation is detected, so the answer is the same, only cheaper.

Unit conversions are not rewritten: whether a division belongs in a query depends on the
question, so that learning reaches the model as text only. Rewritten SQL goes through the
safety check again before it runs.

The engine puts its own ``LIMIT row_cap + 1`` on every query whatever the learnings say
(``rowcap.py``); the performance hint only makes that visible in the SQL the agent reports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from baton.specialists.sql.learnings import ExtractedLearning
from baton.specialists.sql.sqlshape import parse


@dataclass
class Rewrite:
    sql: str
    applied: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def apply_learnings(sql: str, learnings: Sequence[ExtractedLearning], dialect: str, *, row_cap: int = 1000) -> Rewrite:
    if not learnings:
        return Rewrite(sql)
    tree = parse(sql, dialect)
    if tree is None:
        return Rewrite(sql)
    applied: list[str] = []
    for learning in learnings:
        table = learning.entity.lower()
        if learning.category == "schema_gotcha" and learning.attribute == "soft_delete_filter":
            column = _filter_column(learning.value)
            if column and _add_soft_delete(tree, table, column, negate=learning.value.strip().upper().startswith("NOT ")):
                applied.append(f"soft_delete:{table}.{column}")
        elif learning.category == "schema_gotcha" and learning.attribute == "schema" and learning.value:
            if _add_schema(tree, table, learning.value):
                applied.append(f"schema_prefix:{learning.value}.{table}")
        elif learning.category == "performance_hint":
            if _reads(tree, table) and _add_limit(tree, row_cap + 1):
                applied.append(f"limit:{row_cap + 1}")
    if not applied:
        return Rewrite(sql)
    return Rewrite(tree.sql(dialect=dialect), applied)


def _filter_column(value: str) -> str | None:
    match = re.match(r"\s*(?:NOT\s+)?([A-Za-z_][A-Za-z0-9_]*)", value, re.IGNORECASE)
    return match.group(1) if match else None


def _reads(tree: exp.Expr, table: str) -> bool:
    return any(t.name.lower() == table for t in tree.find_all(exp.Table))


def _add_soft_delete(tree: exp.Expr, table: str, column: str, *, negate: bool) -> bool:
    changed = False
    for select in list(tree.find_all(exp.Select)):
        from_ = select.args.get("from") or select.args.get("from_")
        sources: list[tuple[exp.Table, exp.Join | None]] = []
        if from_ is not None and isinstance(from_.this, exp.Table):
            sources.append((from_.this, None))
        sources += [(j.this, j) for j in select.args.get("joins") or [] if isinstance(j.this, exp.Table)]
        for source, join in sources:
            if source.name.lower() != table:
                continue
            alias = source.alias_or_name
            if _already_filtered(select, alias, column):
                continue
            ref = exp.column(column, table=alias)
            condition: exp.Expr = exp.Not(this=ref) if negate else exp.Is(this=ref, expression=exp.Null())
            if join is not None and (join.side or "").upper() in ("LEFT", "RIGHT", "FULL"):
                on = join.args.get("on")
                join.set("on", exp.and_(on, condition) if on is not None else condition)
            else:
                select.where(condition, copy=False)
            changed = True
    return changed


def _already_filtered(select: exp.Select, alias: str, column: str) -> bool:
    places = [select.args.get("where")] + [j.args.get("on") for j in select.args.get("joins") or []]
    for place in places:
        if place is None:
            continue
        for ref in place.find_all(exp.Column):
            if ref.name.lower() == column.lower() and (not ref.table or ref.table.lower() == alias.lower()):
                return True
    return False


def _add_schema(tree: exp.Expr, table: str, schema: str) -> bool:
    changed = False
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for ref in tree.find_all(exp.Table):
        if ref.name.lower() == table and not ref.db and table not in ctes:
            ref.set("db", exp.to_identifier(schema))
            changed = True
    return changed


def _add_limit(tree: exp.Expr, limit: int) -> bool:
    if not isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except)):
        return False
    if tree.args.get("limit") is not None or tree.args.get("fetch") is not None:
        return False
    tree.set("limit", exp.Limit(expression=exp.Literal.number(limit)))
    return True
