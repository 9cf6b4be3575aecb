"""The engine's row bound: every query runs with a top-level ``LIMIT row_cap + 1``.

psycopg's and PyMySQL's default cursors load the whole result on execute, so a row cap
applied while fetching comes too late to bound memory. With the LIMIT, the server stops
early (and can plan a top-N sort instead of sorting everything); the extra row is how
``execute.py`` tells exactly whether the result was cut.

The SQL text is edited, never regenerated from sqlglot's tree, so what runs is what the
safety check read, plus the LIMIT: appended after the last token (on a new line, so a
trailing ``--`` comment cannot swallow it; trailing semicolons dropped), or a larger literal
LIMIT/FETCH count replaced in place. A limit that is not a plain number (``LIMIT ALL``, a
subquery, DuckDB's ``10%``, ``WITH TIES``) wraps the query in ``SELECT * FROM (...) LIMIT``.
Anything that is not one query (EXPLAIN, VALUES, SHOW, text sqlglot cannot read) is left
as it is.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType


def cap_rows(sql: str, dialect: str, limit: int) -> str | None:
    """``sql`` returning at most ``limit`` rows, or None when it is not a single query
    (EXPLAIN, VALUES, SHOW, unparseable text) and runs as written."""
    try:
        engine = Dialect.get_or_raise(dialect)
        tokens = engine.tokenize(sql)
        significant = [t for t in tokens if t.token_type is not TokenType.SEMICOLON]
        if not significant or significant[0].token_type not in _QUERY_STARTS:
            return None  # EXPLAIN, SHOW...: not parsed at all (sqlglot would log a warning)
        statements = [s for s in engine.parser().parse(tokens, sql) if s is not None and not isinstance(s, exp.Semicolon)]
    except Exception:  # noqa: BLE001 - anything sqlglot cannot read runs as written
        return None
    if len(statements) != 1:
        return None
    root = statements[0]
    if not _is_query(root) or root.args.get("locks"):
        return None
    body = sql[: significant[-1].end + 1]  # without trailing semicolons and comments
    clause = root.args.get("limit")
    if clause is None:
        if root.args.get("offset") is not None and dialect in ("mysql", "sqlite"):
            return None  # OFFSET without LIMIT does not parse there
        return f"{body}\nLIMIT {limit}"
    count = clause.args.get("count") if isinstance(clause, exp.Fetch) else clause.expression
    options = clause.args.get("limit_options")
    plain = options is None or not (options.args.get("percent") or options.args.get("with_ties"))
    start, end = (count.meta.get("start"), count.meta.get("end")) if isinstance(count, exp.Literal) else (None, None)
    if plain and isinstance(count, exp.Literal) and count.is_int and isinstance(start, int) and isinstance(end, int):
        if int(count.this) <= limit:
            return sql
        return f"{body[:start]}{limit}{body[end + 1:]}"
    return f"SELECT * FROM (\n{body}\n) AS baton_capped LIMIT {limit}"


_QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN, TokenType.FROM, TokenType.TABLE}


def _is_query(node: exp.Expression) -> bool:
    while isinstance(node, exp.Subquery):
        node = node.this
    return isinstance(node, (exp.Select, exp.SetOperation))
