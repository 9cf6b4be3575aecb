"""Run one statement under its engine's read-only guard, with a deadline and result caps.

Runs in the connection's worker thread (see ``engines.py`` for why). The guard is applied
to every statement, on a DBAPI connection checked out of the pool, and the transaction is
always rolled back, so nothing a statement did can outlive it.

Caps bound memory, not only the answer. psycopg's and PyMySQL's default cursors load the
whole result on execute, so a cap applied while fetching comes too late: every query runs
with a top-level ``LIMIT row_cap + 1`` (``rowcap.py``; the extra row is how
truncation is detected exactly). Chosen over server-side cursors because the server then
stops early and can plan a top-N sort, one mechanism serves all four engines, and nothing
needs cancelling or draining (an unbuffered PyMySQL cursor left half-read drains the rest of
the result). Statements that are not queries (EXPLAIN, and VALUES whose rows are written
out in the text) run as written; SQLite and DuckDB step results lazily anyway. Rows are
then taken up to ``row_cap`` rows and ``byte_cap`` bytes (measured on the values' text
form); a row that would overflow the byte budget ends the result, except the first, whose
oversized text/bytes cells are cut to fit (text gets a trailing ``…``), so even one huge
cell cannot exceed the cap. ``QueryResult.truncated`` says when anything was cut. (A single
huge cell is still held by the driver while its row is read: bounding that would need
server-side ``substr`` on every column.) Column types are the ones
the driver reports (PostgreSQL type names from the OIDs, MySQL field types, DuckDB types);
SQLite reports none, so its storage class is read from the first non-null value.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Any, Iterator

from baton.response import QueryResult
from baton.specialists.sql.classify import ClassifiedError, ErrorClass, SQLExecutionError, classify_error
from baton.specialists.sql.engines import sqlite_read_only_authorizer
from baton.specialists.sql.rowcap import cap_rows

if TYPE_CHECKING:
    from baton.specialists.sql.engines import SQLConnection

_FETCH_BATCH = 500


def run_guarded(conn: SQLConnection, sql: str, timeout_s: float, row_cap: int, byte_cap: int) -> QueryResult:
    """Execute ``sql`` read-only; raise ``SQLExecutionError`` with the classified failure."""
    started = time.perf_counter()
    try:
        raw = conn.engine.raw_connection()
    except Exception as exc:
        raise SQLExecutionError(classify_error(exc, conn.dialect)) from exc
    try:
        try:
            cursor = raw.cursor()
            to_run = cap_rows(sql, conn.dialect, row_cap + 1) or sql
            with _guard(conn, raw, cursor, to_run, timeout_s):
                _execute(conn, cursor, to_run)
                result = _fetch(conn, raw, cursor, row_cap, byte_cap)
        except SQLExecutionError:
            raise
        except Exception as exc:
            raise SQLExecutionError(classify_error(exc, conn.dialect)) from exc
    finally:
        _release(raw)
    result.execution_ms = round((time.perf_counter() - started) * 1000, 3)
    return result


def _execute(conn: SQLConnection, cursor: Any, sql: str) -> None:
    if conn.dialect == "postgres":
        cursor.execute(sql, prepare=True)  # a prepared statement holds exactly one command
    else:
        cursor.execute(sql)


@contextlib.contextmanager
def _guard(conn: SQLConnection, raw: Any, cursor: Any, sql: str, timeout_s: float) -> Iterator[None]:
    dialect = conn.dialect
    if dialect == "postgres":
        cursor.execute("SET TRANSACTION READ ONLY")
        cursor.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout_s * 1000))}")
        yield
    elif dialect == "mysql":
        if conn.server_flavor is None:
            cursor.execute("SELECT VERSION()")
            conn.server_flavor = "mariadb" if "mariadb" in str(cursor.fetchone()[0]).lower() else "mysql"
        if conn.server_flavor == "mariadb":
            cursor.execute(f"SET SESSION max_statement_time = {max(0.001, timeout_s):.3f}")
        else:
            cursor.execute(f"SET SESSION max_execution_time = {max(1, int(timeout_s * 1000))}")
        cursor.execute("SET SESSION TRANSACTION READ ONLY")
        cursor.execute("START TRANSACTION READ ONLY")
        yield
    elif dialect == "sqlite":
        driver: sqlite3.Connection = raw.dbapi_connection
        deadline = time.monotonic() + timeout_s
        driver.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 2000)
        driver.set_authorizer(sqlite_read_only_authorizer)
        try:
            yield
        finally:
            driver.set_authorizer(None)
            driver.set_progress_handler(None, 0)
    elif dialect == "duckdb":
        _admit_duckdb_statement(raw.dbapi_connection, sql)
        timer = threading.Timer(timeout_s, raw.dbapi_connection.interrupt)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
    else:  # pragma: no cover - dialect_of() admits only the four above
        raise AssertionError(dialect)


_DUCKDB_EXPLAIN = re.compile(r"\s*EXPLAIN\s*(?:\(\s*FORMAT\s+\w+\s*\))?\s*(.*)", re.IGNORECASE | re.DOTALL)


def _admit_duckdb_statement(driver: Any, sql: str) -> None:
    """DuckDB's own parser must see one SELECT, or a plain EXPLAIN of one (``explain.py``):
    a read-only DuckDB still runs CREATE TEMP, SET VARIABLE, PREPARE... on the connection."""
    import duckdb

    statements = driver.extract_statements(sql)
    if len(statements) == 1 and statements[0].type == duckdb.StatementType.EXPLAIN:
        inner = _DUCKDB_EXPLAIN.fullmatch(statements[0].query)
        if inner and not inner.group(1).lstrip().upper().startswith("ANALYZE"):
            statements = driver.extract_statements(inner.group(1))
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(str(s.type).rsplit(".", 1)[-1] for s in statements) or "nothing"
        raise SQLExecutionError(ClassifiedError(
            ErrorClass.PERMISSION_DENIED, f"only a single SELECT may run on this connection; DuckDB parsed: {kinds}",
            code="NotASelect"))


def _fetch(conn: SQLConnection, raw: Any, cursor: Any, row_cap: int, byte_cap: int) -> QueryResult:
    description = cursor.description or []
    columns = [d[0] for d in description]
    rows: list[list[Any]] = []
    size = 0
    truncated = False
    while not truncated:
        batch = cursor.fetchmany(_FETCH_BATCH) if description else []
        if not batch:
            break
        for row in batch:
            if len(rows) >= row_cap:
                truncated = True
                break
            values = list(row)
            row_size = sum(_size(v) for v in values)
            if size + row_size > byte_cap:
                truncated = True
                if not rows:
                    rows.append(_fit_cells(values, byte_cap))
                break
            size += row_size
            rows.append(values)
    return QueryResult(columns=columns, rows=rows, column_types=_types(conn, raw, description, rows), truncated=truncated)


def _fit_cells(values: list[Any], budget: int) -> list[Any]:
    """The row with its text and bytes cells cut so that the row fits in ``budget``."""
    fixed = sum(_size(v) for v in values if not isinstance(v, (str, bytes, bytearray, memoryview)))
    left = max(0, budget - fixed)
    out = []
    for value in values:
        if isinstance(value, (str, bytes, bytearray, memoryview)):
            if len(value) > left:
                value = value[: max(0, left - 1)] + "…" if isinstance(value, str) else bytes(value[:left])
            left -= min(left, len(value))
        out.append(value)
    return out


def _size(value: Any) -> int:
    if value is None:
        return 4
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    if isinstance(value, str):
        return len(value)
    return len(str(value))


def _types(conn: SQLConnection, raw: Any, description: Any, rows: list[list[Any]]) -> list[str]:
    if conn.dialect == "postgres":
        registry = raw.dbapi_connection.adapters.types
        names = []
        for d in description:
            info = registry.get(d[1])
            names.append(info.name if info is not None else str(d[1]))
        return names
    if conn.dialect == "mysql":
        from pymysql.constants import FIELD_TYPE

        by_code = {v: k for k, v in vars(FIELD_TYPE).items() if isinstance(v, int)}
        return [by_code.get(d[1], str(d[1])) for d in description]
    if conn.dialect == "duckdb":
        return [str(d[1]) for d in description]
    return [_sqlite_storage_class(rows, i) for i in range(len(description))]


def _sqlite_storage_class(rows: list[list[Any]], index: int) -> str:
    for row in rows:
        value = row[index]
        if value is None:
            continue
        if isinstance(value, bool) or isinstance(value, int):
            return "INTEGER"
        if isinstance(value, float):
            return "REAL"
        if isinstance(value, bytes):
            return "BLOB"
        return "TEXT"
    return "NULL"


def _release(raw: Any) -> None:
    with contextlib.suppress(Exception):
        raw.rollback()
    with contextlib.suppress(Exception):
        raw.close()
