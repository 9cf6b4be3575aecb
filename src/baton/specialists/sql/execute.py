"""Run one statement under its engine's read-only guard, with a deadline and bounded results.

Runs in the connection's worker thread (see ``connection.py`` for why). The engine's guard
(``engines/``) is applied to every statement, on a DBAPI connection checked out of the pool, and the transaction is
always rolled back, so nothing a statement did can outlive it.

Bounded while fetching, not after (what each engine adds is in ``limits.py`` and its module
under ``engines/``):

- Rows: every query runs with a top-level ``LIMIT row_cap + 1`` (``rowcap.py``; the extra
  row is how truncation is detected exactly), so the server stops early and can plan a
  top-N sort.
- Bytes: rows are read one at a time (PostgreSQL: libpq single-row mode; MySQL/MariaDB:
  PyMySQL's unbuffered ``SSCursor``; SQLite and DuckDB step their results lazily) and kept
  while the result stays within ``byte_cap`` (measured on the values' text form). The row
  that would overflow ends the result, ``truncated``; when it is the first row, its
  text/bytes cells are cut to fit (text gets a trailing ``…``), so even one huge cell cannot
  exceed the cap. A row over ``max_row_bytes`` is refused instead (by the server on
  PostgreSQL, before the row's packet is read on MySQL/MariaDB, by SQLite's length limit
  inside SQLite): as the first row, with ``ErrorClass.RESOURCE_LIMIT`` (cutting it would
  mean materialising it here first); after other rows, it ends the result, ``truncated``.
- A result left half-read on a server connection is not drained (draining reads the rest of
  it, up to ``row_cap`` rows of up to ``max_row_bytes``): the connection is invalidated and
  the pool opens a new one. The row cap's extra row is the last one the LIMIT lets through,
  so stopping there reads only the end-of-result message and keeps the connection.

Statements that are not one query (EXPLAIN, SHOW) run as written: their output is bounded by
their text. Column types are the ones the driver reports (PostgreSQL type names from the
OIDs, MySQL field types, DuckDB types); SQLite reports none, so its storage class is read from
the first non-null value.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from baton.response import QueryResult
from baton.specialists.sql.classify import ClassifiedError, ErrorClass, SQLExecutionError, classify_error
from baton.specialists.sql.rowcap import cap_rows
from baton.specialists.sql.rowstream import RowReader, stop_reading

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection

def run_guarded(conn: SQLConnection, sql: str, timeout_s: float, row_cap: int, byte_cap: int) -> QueryResult:
    """Execute ``sql`` read-only; raise ``SQLExecutionError`` with the classified failure."""
    started = time.perf_counter()
    try:
        raw = conn.engine.raw_connection()
    except Exception as exc:
        raise SQLExecutionError(classify_error(exc, conn.dialect)) from exc
    reader: RowReader | None = None
    discard = False
    try:
        try:
            capped = cap_rows(sql, conn.dialect, row_cap + 1)
            to_run, bounded = capped or sql, capped is not None
            if (guarded := conn.kind.bound_rows(conn, to_run, row_cap + 1)) is not None:
                to_run, bounded = guarded, True
            cursor = raw.cursor()
            reader = RowReader(bounded)
            with conn.kind.guard(conn, raw, cursor, to_run, timeout_s):
                conn.kind.open_rows(conn, raw, cursor, to_run, reader)
                result = _collect(conn, raw, reader, row_cap, byte_cap)
        except SQLExecutionError as err:
            discard = _unusable(reader, err.error)
            raise
        except Exception as exc:
            error = classify_error(exc, conn.dialect)
            discard = _unusable(reader, error)
            raise SQLExecutionError(error) from exc
        discard = reader.abandoned
    finally:
        _release(raw, reader, discard)
    result.execution_ms = round((time.perf_counter() - started) * 1000, 3)
    return result


def _unusable(reader: RowReader | None, error: ClassifiedError) -> bool:
    """A connection that failed mid-result, lost its link or refused a packet is not pooled."""
    if error.error_class is ErrorClass.CONNECTION_ERROR or error.code == "2020":
        return True
    with contextlib.suppress(Exception):
        return reader is not None and (reader.abandoned or reader.in_flight())
    return True


# --- keeping what fits ------------------------------------------------------------------------


def _collect(conn: SQLConnection, raw: Any, reader: RowReader, row_cap: int, byte_cap: int) -> QueryResult:
    """Rows while they fit. A row refused for its size after others were kept ends the result
    like any row that overflows the budget (``truncated``); refused as the first row, it is
    the statement's error: there is nothing to show."""
    rows: list[list[Any]] = []
    size = 0
    truncated = True
    stopped_at_row_cap = False
    try:
        for row in reader.rows:
            if len(rows) >= row_cap:
                stopped_at_row_cap = True
                break
            values = list(row)
            row_size = sum(_size(v) for v in values)
            if size + row_size > byte_cap:
                if not rows:
                    rows.append(_fit_cells(values, byte_cap))
                break
            size += row_size
            rows.append(values)
        else:
            truncated = False
    except Exception as exc:
        if not rows or not _row_refused(exc, conn.dialect):
            raise
    if truncated:
        stop_reading(reader, stopped_at_row_cap)
    description = reader.description() or []
    columns = [d[0] for d in description]
    return QueryResult(columns=columns, rows=rows, column_types=conn.kind.column_types(conn, raw, description, rows), truncated=truncated)


def _row_refused(exc: Exception, dialect: str) -> bool:
    """A size limit hit by one row, not a NULL the server put in place of a value (1301)."""
    error = exc.error if isinstance(exc, SQLExecutionError) else classify_error(exc, dialect)
    return error.error_class is ErrorClass.RESOURCE_LIMIT and error.code != "1301"


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


def _release(raw: Any, reader: RowReader | None, discard: bool) -> None:
    """Back to the pool (rolled back, then reset by ``session_reset.py``), or, when the
    connection was left mid-result or broken, closed first so nothing drains it."""
    if discard:
        with contextlib.suppress(Exception):
            if reader is not None:
                reader.abandon()
            raw.invalidate()
    else:
        with contextlib.suppress(Exception):
            raw.rollback()
    if reader is not None:
        with contextlib.suppress(Exception):
            close = getattr(reader.rows, "close", None)  # a psycopg stream: after the connection is closed, no cancel+drain
            if close is not None:
                close()
    with contextlib.suppress(Exception):
        raw.close()
