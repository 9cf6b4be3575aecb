"""The SQL a semantic model may hold: a small, pure subset, parsed once and compiled as a tree.

A measure's ``expr`` and ``filter`` and a dimension's ``expr`` are SQL fragments written by
whoever wrote the model (maybe not the operator: a model can come from a repository, from
``baton semantic init``, from a colleague). They are parsed with sqlglot and must be made
only of:

- columns, unqualified (the entity's own table is the only one in scope);
- literals, NULL, TRUE/FALSE, parentheses;
- arithmetic, comparisons, AND/OR/NOT, IS [NOT] NULL, IN (literals), BETWEEN, LIKE;
- CASE, CAST, COALESCE, NULLIF, and the pure functions ABS, ROUND, LOWER, UPPER, TRIM,
  LENGTH, SUBSTRING;
- ``DATEDIFF('day', start, end)`` (``DATE_DIFF``): the days from one date to another, as DuckDB,
  Snowflake, Redshift and SQL Server count them (the day boundaries crossed: both read as
  DATE), compiled for each engine. Its two-argument form (MySQL's, ``end - start``) and other
  units are refused: their meaning differs between warehouses.

Anything else — a subquery, a table, ``*``, a placeholder, any other function (``pg_read_file``,
``load_extension``, ``sleep``), several statements — is a ``SemanticModelError`` when the
model loads. The compiler embeds the parsed tree (never the text), so a comment or a
``; DROP ...`` tail cannot survive; and the compiled query still goes through the
workspace's safety check and engine guard like any other.

A derived metric's ``expr`` is arithmetic over metric names and numbers, with the functions
MetricFlow projects write there (``NULLIF``, ``COALESCE``, ``CASE``, ``ABS``, ``ROUND``) and
comparisons; every column in it is a metric.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from baton.semantic.errors import SemanticModelError

if TYPE_CHECKING:
    from sqlglot import exp

    from baton.semantic.model import SemanticModel

MAX_EXPRESSION = 2000
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}\Z")


def _allowed_nodes():
    from sqlglot import exp

    return (
        exp.Column, exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.Neg,
        exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.DPipe,
        exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.Not, exp.And, exp.Or,
        exp.In, exp.Between, exp.Like, exp.ILike, exp.Tuple,
        exp.Case, exp.If, exp.Cast, exp.DataType, exp.DataTypeParam, exp.Coalesce, exp.Nullif,
        exp.Abs, exp.Round, exp.Lower, exp.Upper, exp.Trim, exp.Length, exp.Substring, exp.DateDiff,
    )


def is_identifier(name: object) -> bool:
    """Whether ``name`` is one plain identifier (letters, digits, ``_``): a column, not an expression."""
    return isinstance(name, str) and _IDENTIFIER.match(name) is not None


def identifier(name: str, what: str) -> str:
    """``name`` when it is a plain identifier (letters, digits, ``_``), else an error."""
    if not is_identifier(name):
        raise SemanticModelError(f"{what} {name!r} is not a plain identifier (letters, digits and '_')")
    return name


@functools.lru_cache(maxsize=2048)
def parse_fragment(text: str, where: str, *, dimensions: bool = False) -> exp.Expr:
    """The tree of a row expression or filter (module docstring), or ``SemanticModelError``.
    ``dimensions``: a measure filter, which may also name a dimension as ``dimension.<name>``
    (compiled through the model's joins, never as a table)."""
    import sqlglot
    from sqlglot import exp

    if not isinstance(text, str) or not text.strip():
        raise SemanticModelError(f"{where}: an empty expression")
    if len(text) > MAX_EXPRESSION:
        raise SemanticModelError(f"{where}: expression longer than {MAX_EXPRESSION} characters")
    try:
        statements = sqlglot.parse(text)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError) as exc:
        raise SemanticModelError(f"{where}: not an SQL expression ({str(exc).splitlines()[0][:200]})") from None
    if len(statements) != 1 or statements[0] is None:
        raise SemanticModelError(f"{where}: one expression expected, got {len(statements)} statements")
    tree = statements[0]
    if isinstance(tree, exp.Query) or isinstance(tree, exp.Command):
        raise SemanticModelError(f"{where}: a query is not an expression")
    if tree.find(exp.DateDiff):
        tree = _day_differences(text, where)
    allowed = _allowed_nodes()
    for node in tree.walk():
        if isinstance(node, exp.Var) and isinstance(node.parent, exp.DateDiff) and node.arg_key == "unit":
            continue
        if not isinstance(node, allowed):
            raise SemanticModelError(f"{where}: {node.key.upper()} is not allowed in a semantic model expression "
                                     f"(columns, literals, arithmetic, comparisons, CASE, CAST, COALESCE and a few pure functions)")
        if isinstance(node, exp.Column):
            if dimensions and node.table == "dimension" and not node.args.get("db") and not node.args.get("catalog"):
                identifier(node.name, f"{where}: dimension")
                continue
            if node.table or node.args.get("db") or node.args.get("catalog"):
                raise SemanticModelError(f"{where}: column {node.sql()!r} names a table; use the entity's own columns only")
            identifier(node.name, f"{where}: column")
        if isinstance(node, exp.In) and (node.args.get("query") is not None or node.args.get("unnest") is not None):
            raise SemanticModelError(f"{where}: IN takes a list of literals only")
    return tree


def _day_differences(text: str, where: str) -> exp.Expr:
    """``text`` read as the warehouses that write ``DATEDIFF(unit, start, end)`` read it (DuckDB's
    grammar), each difference of days made ``DATEDIFF(DAY, CAST(start AS DATE), CAST(end AS DATE))``:
    the day boundaries crossed, rendered per engine by sqlglot (module docstring)."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        raise SemanticModelError(f"{where}: DATEDIFF is read as DATEDIFF('day', start, end) only (its other forms "
                                 "differ between warehouses)") from None

    def day_difference(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.DateDiff):
            return node
        unit = node.args.get("unit")
        if not isinstance(unit, exp.Var) or unit.name.upper() != "DAY" or node.this is None or node.expression is None:
            raise SemanticModelError(f"{where}: DATEDIFF is read as DATEDIFF('day', start, end) only (its other units and "
                                     "forms differ between warehouses)")
        date = exp.DataType.build("DATE")
        return exp.DateDiff(this=exp.Cast(this=node.this, to=date), expression=exp.Cast(this=node.expression, to=date.copy()),
                            unit=exp.Var(this="DAY"))

    return tree.transform(day_difference)


def columns_of(text: str, where: str, *, dimensions: bool = False) -> tuple[str, ...]:
    """The entity's own columns ``text`` reads (``dimension.<name>`` references aside)."""
    from sqlglot import exp

    tree = parse_fragment(text, where, dimensions=dimensions)
    return tuple(dict.fromkeys(c.name for c in tree.find_all(exp.Column) if c.table != "dimension"))


def dimensions_of(text: str, where: str) -> tuple[str, ...]:
    """The dimensions a measure filter names as ``dimension.<name>``."""
    from sqlglot import exp

    tree = parse_fragment(text, where, dimensions=True)
    return tuple(dict.fromkeys(c.name for c in tree.find_all(exp.Column) if c.table == "dimension"))


@functools.lru_cache(maxsize=512)
def parse_metric_expression(text: str, where: str) -> exp.Expr:
    """A derived metric's expression: metric names, numbers, arithmetic and the few functions of the module docstring."""
    from sqlglot import exp

    tree = parse_fragment(text, where)
    allowed = (exp.Column, exp.Identifier, exp.Literal, exp.Paren, exp.Neg, exp.Add, exp.Sub, exp.Mul, exp.Div,
               exp.Null, exp.Boolean, exp.Nullif, exp.Coalesce, exp.Case, exp.If, exp.Abs, exp.Round,
               exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.Not, exp.And, exp.Or)
    for node in tree.walk():
        if not isinstance(node, allowed):
            raise SemanticModelError(f"{where}: a derived metric is arithmetic over metric names (with NULLIF, COALESCE, "
                                     f"CASE, ABS, ROUND and comparisons), got {node.key.upper()}")
        if isinstance(node, exp.Literal) and node.is_string:
            raise SemanticModelError(f"{where}: a derived metric holds numbers, not text")
    return tree


OFFSET_MARK = "__offset_"  # ``bookings__offset_14``: the metric 14 days earlier (a MetricFlow offset_window input)


def metric_references(text: str, model: SemanticModel) -> tuple[str, ...]:
    from sqlglot import exp

    names = tuple(dict.fromkeys(c.name.split(OFFSET_MARK)[0]
                                for c in parse_metric_expression(text, "derived metric").find_all(exp.Column)))
    for name in names:
        if not model.has_metric(name):
            raise SemanticModelError(f"derived metric refers to {name!r}, which is no metric of the model")
    return names


__all__ = ["OFFSET_MARK", "columns_of", "dimensions_of", "identifier", "is_identifier", "metric_references", "parse_fragment", "parse_metric_expression"]


@functools.cache
def _keywords(dialect: str) -> frozenset[str]:
    """Every word sqlglot's tokenizer treats as a keyword (``ORDER`` only appears in
    ``ORDER BY``), and the dialect's reserved words where sqlglot lists them."""
    from sqlglot.dialects.dialect import Dialect

    engine = Dialect.get_or_raise(dialect)
    words = {part for key in engine.tokenizer_class.KEYWORDS for part in key.split()}
    words |= set(getattr(engine.generator_class, "RESERVED_KEYWORDS", ()) or ())
    return frozenset(w.lower() for w in words if w.replace("_", "").isalnum())


def render_sql(tree: exp.Expr, dialect: str) -> str:
    """``tree`` as ``dialect`` SQL, with every identifier that is a keyword quoted: sqlglot
    leaves ``FROM orders AS order`` bare on SQLite and PostgreSQL, which then refuse it, and a
    model may well name an entity ``order`` or a column ``date``. Quoting a lower-case name
    changes nothing else (unquoted names fold to lower case on those engines)."""
    from sqlglot import exp

    keywords = _keywords(dialect)
    tree = tree.copy()
    for identifier in tree.find_all(exp.Identifier):
        if not identifier.quoted and identifier.name.lower() in keywords:
            identifier.set("quoted", True)
    return tree.sql(dialect=dialect)
