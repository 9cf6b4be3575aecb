"""What a query touches, read with sqlglot: tables, columns (resolved to their tables),
divisions by 100/1000, soft-delete filters, schema prefixes, LIMIT and date filters.

Learning extraction compares these shapes between a failed and a fixed attempt; the
deterministic rewrites use the same reading. Everything here tolerates SQL that does not
parse (an attempt may have failed for exactly that reason): the shape is then empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from baton.specialists.sql.schema import SchemaInfo

SOFT_DELETE_COLUMN = re.compile(r"^(deleted(_at|_on|_date)?|is_deleted|removed_at|archived_at)$", re.IGNORECASE)
DATE_COLUMN = re.compile(r"(date|_at|_on|time|timestamp|day|month|year|created|updated)$", re.IGNORECASE)


@dataclass
class QueryShape:
    parsed: bool = False
    tables: set[str] = field(default_factory=set)  # bare lower-case names
    qualified: dict[str, str] = field(default_factory=dict)  # bare name -> schema prefix used
    columns: set[tuple[str | None, str]] = field(default_factory=set)  # (table or None, column), lower-case
    divisors: dict[tuple[str | None, str], int] = field(default_factory=dict)  # column -> 100 | 1000
    soft_delete: set[tuple[str, str]] = field(default_factory=set)  # (table, column) filtered IS NULL / false
    has_limit: bool = False
    date_filtered: set[str] = field(default_factory=set)  # tables with a comparison on a date-like column

    @property
    def column_names(self) -> set[str]:
        return {c for _, c in self.columns}


def parse(sql: str, dialect: str) -> exp.Expr | None:
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return None
    return statements[0] if len(statements) == 1 and statements[0] is not None else None


def shape_of(sql: str, dialect: str, schema: SchemaInfo | None = None) -> QueryShape:
    tree = parse(sql, dialect)
    shape = QueryShape()
    if tree is None:
        return shape
    shape.parsed = True
    shape.has_limit = tree.args.get("limit") is not None or tree.args.get("fetch") is not None
    for select in tree.find_all(exp.Select):
        aliases = _aliases(select)
        for table in _own_tables(select):
            shape.tables.add(table.name.lower())
            if table.db:
                shape.qualified[table.name.lower()] = table.db
        for column in _own_columns(select):
            owner = _owner(column, aliases, schema)
            shape.columns.add((owner, column.name.lower()))
        for div in select.find_all(exp.Div):
            if div.find_ancestor(exp.Select) is not select:
                continue
            divisor = _literal_int(div.expression)
            if divisor in (100, 1000):
                for column in div.this.find_all(exp.Column):
                    shape.divisors[(_owner(column, aliases, schema), column.name.lower())] = divisor
        where = select.args.get("where")
        conditions = [where] if where is not None else []
        conditions += [j.args.get("on") for j in select.args.get("joins") or [] if j.args.get("on") is not None]
        for condition in conditions:
            for node in condition.find_all(exp.Is, exp.EQ, exp.Not):
                column = node.find(exp.Column)
                if column is None or node.find_ancestor(exp.Select) is not select or not SOFT_DELETE_COLUMN.match(column.name):
                    continue
                if _is_soft_delete_test(node):
                    owner = _owner(column, aliases, schema)
                    if owner:
                        shape.soft_delete.add((owner, column.name.lower()))
            for node in condition.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.EQ):
                column = node.find(exp.Column)
                if column is not None and node.find_ancestor(exp.Select) is select and _is_date_column(column, aliases, schema):
                    owner = _owner(column, aliases, schema)
                    if owner:
                        shape.date_filtered.add(owner)
    return shape


def _own_tables(select: exp.Select) -> list[exp.Table]:
    tables = []
    from_ = select.args.get("from") or select.args.get("from_")
    sources = [from_.this] if from_ is not None else []
    sources += [j.this for j in select.args.get("joins") or []]
    for source in sources:
        if isinstance(source, exp.Table) and source.name:
            tables.append(source)
    return tables


def _own_columns(select: exp.Select) -> list[exp.Column]:
    columns = []
    for column in select.find_all(exp.Column):
        if column.find_ancestor(exp.Select) is select and column.name:
            columns.append(column)
    return columns


def _aliases(select: exp.Select) -> dict[str, str]:
    """alias or name (lower) -> bare table name (lower), for this SELECT's own sources."""
    return {t.alias_or_name.lower(): t.name.lower() for t in _own_tables(select)} | {
        t.name.lower(): t.name.lower() for t in _own_tables(select)
    }


def _owner(column: exp.Column, aliases: dict[str, str], schema: SchemaInfo | None) -> str | None:
    if column.table:
        return aliases.get(column.table.lower(), column.table.lower())
    tables = sorted(set(aliases.values()))
    if len(tables) == 1:
        return tables[0]
    if schema is not None:
        owners = [t for t in tables if (info := schema.table(t)) is not None and info.column(column.name) is not None]
        if len(owners) == 1:
            return owners[0]
    return None


def _is_date_column(column: exp.Column, aliases: dict[str, str], schema: SchemaInfo | None) -> bool:
    owner = _owner(column, aliases, schema)
    if schema is not None and owner is not None:
        table = schema.table(owner)
        info = table.column(column.name) if table is not None else None
        if info is not None and re.search(r"date|time", info.type, re.IGNORECASE):
            return True
    return bool(DATE_COLUMN.search(column.name))


def _is_soft_delete_test(node: exp.Expr) -> bool:
    if isinstance(node, exp.Is):
        return isinstance(node.expression, exp.Null) and not isinstance(node.parent, exp.Not)
    if isinstance(node, exp.EQ):
        value = node.expression
        return isinstance(value, exp.Boolean) and not value.this or _literal_int(value) == 0
    if isinstance(node, exp.Not):
        return isinstance(node.this, exp.Column)
    return False


def _literal_int(node: exp.Expr | None) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = float(node.this)
        except ValueError:
            return None
        return int(value) if value.is_integer() else None
    if isinstance(node, exp.Cast):
        return _literal_int(node.this)
    if isinstance(node, exp.Paren):
        return _literal_int(node.this)
    return None
