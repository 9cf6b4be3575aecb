"""Rows bounded before they reach this process: in number (a top-level ``LIMIT row_cap + 1``
on every query) and, on PostgreSQL and SQLite, in size (the statement shapes ``limits.py``
relies on).

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

Row size, PostgreSQL: ``postgres_row_guard`` wraps what PostgreSQL's own parser (pglast)
reads as exactly one SELECT or VALUES, never a shape decided by sqlglot: a text whose
parentheses sqlglot and the server balance differently could otherwise close the wrapper
early and leave part of the result outside the guard. SQLite: ``sqlite_probe`` is the same
statement under ``LIMIT 0``, compiled but not evaluated, to learn the result's width.
"""

from __future__ import annotations

import functools
import re

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from baton.specialists.sql.classify import ROW_LIMIT_MARKER
from baton.specialists.sql.engines import engine_named


@functools.lru_cache(maxsize=512)
def cap_rows(sql: str, dialect: str, limit: int) -> str | None:
    """``sql`` returning at most ``limit`` rows, or None when it is not a single query
    (EXPLAIN, VALUES, SHOW, unparseable text) and runs as written. Remembered per text: a
    verified question's SQL runs again and again, and the answer depends on the text alone."""
    try:
        engine = Dialect.get_or_raise(dialect)
        tokens = engine.tokenize(sql)
        significant = [t for t in tokens if t.token_type is not TokenType.SEMICOLON]
        if not significant or significant[0].token_type not in _QUERY_STARTS:
            return None  # EXPLAIN, SHOW...: not parsed at all (sqlglot would log a warning)
        statements = [s for s in engine.parser().parse(tokens, sql) if s is not None and not isinstance(s, exp.Semicolon)]
    except Exception:
        return None
    if len(statements) != 1:
        return None
    root = statements[0]
    if not _is_query(root) or root.args.get("locks"):
        return None
    body = sql[: significant[-1].end + 1]  # without trailing semicolons and comments
    clause = root.args.get("limit")
    if clause is None:
        if root.args.get("offset") is not None and engine_named(dialect).offset_needs_limit:
            return None  # OFFSET without LIMIT does not parse there
        return f"{body}\nLIMIT {limit}"
    count = clause.args.get("count") if isinstance(clause, exp.Fetch) else clause.expression
    options = clause.args.get("limit_options")
    plain = options is None or not (options.args.get("percent") or options.args.get("with_ties"))
    start, end = (count.meta.get("start"), count.meta.get("end")) if isinstance(count, exp.Literal) else (None, None)
    if plain and isinstance(count, exp.Literal) and count.is_int and isinstance(start, int) and isinstance(end, int):
        if int(count.this) <= limit:
            return body  # as written, less any trailing semicolon or comment
        return f"{body[:start]}{limit}{body[end + 1:]}"
    return f"SELECT * FROM (\n{body}\n) AS baton_capped LIMIT {limit}"


_QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN, TokenType.FROM, TokenType.TABLE}


def _is_query(node: exp.Expr) -> bool:
    while isinstance(node, exp.Subquery):
        node = node.this
    return isinstance(node, (exp.Select, exp.SetOperation))


def trimmed_statement(sql: str, dialect: str) -> str | None:
    """``sql`` without trailing semicolons and comments when sqlglot's tokenizer sees one
    statement (VALUES included), so that it can sit inside parentheses; else None."""
    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    except Exception:
        return None
    significant = [t for t in tokens if t.token_type is not TokenType.SEMICOLON]
    if not significant or any(t.token_type is TokenType.SEMICOLON for t in tokens if t.start < significant[-1].start):
        return None
    return sql[: significant[-1].end + 1]


_PG_ONE_SELECT = re.compile(r'\{"version":\d+,"stmts":\[\{"stmt":\{"SelectStmt":')


def postgres_single_select(sql: str) -> str | None:
    """The statement's text when PostgreSQL's parser reads exactly one SELECT (set operations,
    WITH, TABLE and VALUES included), trailing semicolons dropped; else None (EXPLAIN, SHOW,
    several statements, text the server will refuse)."""
    from pglast import parser

    try:
        statements = parser.split(sql, with_parser=True)
        if len(statements) != 1 or not _PG_ONE_SELECT.match(parser.parse_sql_json(statements[0])):
            return None
    except Exception:
        return None
    return statements[0]


def postgres_row_guard(query: str, max_row_bytes: int, row_limit: int) -> str:
    """``query`` (one SELECT, see ``postgres_single_select``) returning at most ``row_limit``
    rows, each refused by the server when it is over ``max_row_bytes``.

    ``pg_column_size`` of the whole row is cheap but counts compressed values at their
    stored size; a row whose stored size is at most 1/1024 of the limit cannot expand past it
    (pglz and lz4 compress at most ~256:1, text output at most 4x bytes), so only larger
    rows pay for ``octet_length(CAST(row AS text))``. The raising branches cast a message
    that carries the row's size to boolean: STABLE functions of the row, never folded into a
    plan-time error for rows that are within the limit.
    """
    stored = "pg_column_size(baton_row.*)"
    text = "octet_length(CAST(baton_row.* AS text))"

    def refuse(size: str) -> str:
        return f"('{ROW_LIMIT_MARKER}: a row of ' || {size} || ' bytes is over the {max_row_bytes}-byte row limit')::boolean"

    return (
        f"SELECT * FROM (SELECT * FROM (\n{query}\n) AS baton_query LIMIT {row_limit}) AS baton_row\n"
        f"WHERE CASE WHEN {stored} <= {max_row_bytes // 1024} THEN true WHEN {stored} > {max_row_bytes} THEN {refuse(stored)} "
        f"WHEN {text} > {max_row_bytes} THEN {refuse(text)} ELSE true END"
    )


def sqlite_probe(statement: str) -> str:
    """``statement`` under ``LIMIT 0``: SQLite compiles it (the result's columns are known)
    and stops before the first row is computed."""
    return f"SELECT * FROM (\n{statement}\n) LIMIT 0"
