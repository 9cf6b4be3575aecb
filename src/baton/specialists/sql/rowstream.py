"""Reading one statement's rows one at a time, per engine, so that a result is bounded while
it is fetched (``execute.py`` keeps what fits), and never draining what is left unread.

- PostgreSQL: ``cursor.stream`` (libpq single-row mode over the extended protocol, which
  holds one command, as the prepared statement it replaces did). psycopg reports no columns
  for a stream that yields no row, so an empty result's shape is read by preparing (not
  running) the statement. Stopping early would make psycopg cancel the query and read what is
  in flight: instead the connection is closed first and the generator after.
- MySQL/MariaDB: PyMySQL's unbuffered ``SSCursor``: one row packet at a time (each bounded by
  ``limits.RowBoundedConnection``). At the end, warning 1301 (a value the server replaced by
  NULL because it passed ``max_allowed_packet``) becomes a ``resource_limit`` error. Stopping
  early: the result is marked abandoned and the connection closed, not drained.
- SQLite: the value-length limit for this statement (``limits.py``), then the cursor's own
  lazy stepping; DuckDB: its streaming result, fetched row by row.

A reader that stopped early on a server connection, or a SQLite connection on which
``printf``/``format`` were replaced, is ``abandoned``: ``execute.py`` invalidates it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from baton.specialists.sql.classify import ClassifiedError, ErrorClass, SQLExecutionError
from baton.specialists.sql.limits import sqlite_bounded_printf, sqlite_value_limit
from baton.specialists.sql.rowcap import sqlite_probe, trimmed_statement

if TYPE_CHECKING:
    from baton.specialists.sql.engines import SQLConnection

_END = object()
_WARN_VALUE_TOO_LARGE = 1301  # MariaDB/MySQL: "Result of repeat() was larger than max_allowed_packet"


class RowReader:
    """One statement's rows, read one at a time, and what to do when reading stops early
    (filled in per engine by ``open_rows``). ``in_flight``: the server may still be sending this
    result (never, in process); ``abandon``: called before such a connection is closed, so
    that nothing drains it; ``abandoned``: the connection must not be pooled again."""

    def __init__(self, bounded: bool) -> None:
        self.bounded = bounded  # a LIMIT row_cap + 1 is known to apply
        self.rows: Iterator[Any] = iter(())
        self.description: Callable[[], Any] = lambda: None
        self.in_flight: Callable[[], bool] = lambda: False
        self.abandon: Callable[[], None] = lambda: None
        self.abandoned = False


def open_rows(conn: SQLConnection, raw: Any, cursor: Any, sql: str, reader: RowReader) -> None:
    if conn.dialect == "postgres":
        return _open_postgres(raw, cursor, sql, reader)
    if conn.dialect == "mysql":
        return _open_mysql(raw, cursor, sql, reader)
    if conn.dialect == "sqlite":
        return _open_sqlite(conn, raw.dbapi_connection, cursor, sql, reader)
    cursor.execute(sql)
    reader.rows, reader.description = iter(cursor.fetchone, None), lambda: cursor.description


def _open_postgres(raw: Any, cursor: Any, sql: str, reader: RowReader) -> None:
    """libpq single-row mode over the extended protocol (one command per statement)."""
    from psycopg.pq import TransactionStatus

    driver = raw.dbapi_connection

    def description() -> Any:
        if cursor.description is not None:
            return cursor.description
        return _describe_postgres(driver, sql)  # no row arrived: the result's shape only

    def in_flight() -> bool:
        return driver.closed or driver.info.transaction_status is TransactionStatus.ACTIVE

    reader.rows, reader.description, reader.in_flight = cursor.stream(sql), description, in_flight


def _describe_postgres(driver: Any, sql: str) -> list[tuple[str, int]]:
    """Column names and type OIDs of ``sql``, prepared (not run) as the unnamed statement."""
    from psycopg import pq

    encoding = driver.info.encoding
    prepared = driver.pgconn.prepare(b"", sql.encode(encoding))
    if prepared.status != pq.ExecStatus.COMMAND_OK:
        return []
    shape = driver.pgconn.describe_prepared(b"")
    return [(shape.fname(i).decode(encoding), shape.ftype(i)) for i in range(shape.nfields)]


def _open_mysql(raw: Any, cursor: Any, sql: str, reader: RowReader) -> None:
    import pymysql

    driver = raw.dbapi_connection
    if not isinstance(driver, pymysql.connections.Connection):  # another driver: buffered, NullPool (engines.py)
        cursor.execute(sql)
        reader.rows, reader.description = iter(cursor.fetchone, None), lambda: cursor.description
        return
    unbuffered = driver.cursor(pymysql.cursors.SSCursor)
    reader.in_flight = getattr(driver, "result_in_flight", lambda: True)
    reader.abandon = getattr(driver, "abandon_result", lambda: None)
    unbuffered.execute(sql)

    def rows() -> Iterator[Any]:
        yield from iter(unbuffered.fetchone, None)
        if unbuffered.warning_count:
            _refuse_mysql_truncated_values(driver)

    reader.rows, reader.description = rows(), lambda: unbuffered.description


def _refuse_mysql_truncated_values(driver: Any) -> None:
    """A value the server would not build within ``max_allowed_packet`` arrives as NULL with
    warning 1301: not an answer to the question asked."""
    for _level, code, message in driver.show_warnings() or ():
        if code == _WARN_VALUE_TOO_LARGE:
            raise SQLExecutionError(ClassifiedError(ErrorClass.RESOURCE_LIMIT, str(message), str(code)))


def _open_sqlite(conn: SQLConnection, driver: sqlite3.Connection, cursor: Any, sql: str, reader: RowReader) -> None:
    """The statement under a value-length limit of ``max_row_bytes / columns``
    (``limits.py``), so that no row it returns is over ``max_row_bytes``.

    The column count of a statement run before is remembered (``conn.sqlite_columns``):
    learning it means compiling the statement once more (``sqlite_probe``), and on a
    server each compile calls the read-only authorizer, a Python callback, several times:
    each call waits for the interpreter lock while the event loop holds it. If the schema
    changed since, the count is corrected from the statement's own description as soon as it
    runs and the limit tightened for its remaining rows."""
    statement = sql if reader.bounded else trimmed_statement(sql, "sqlite")  # a capped query is trimmed already
    limit = conn.options.max_row_bytes
    known = conn.sqlite_columns.get(statement) if statement is not None else None
    columns = known if known is not None else _probe_columns(driver, statement)
    value_limit = sqlite_value_limit(limit, columns)
    driver.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, value_limit)
    reader.abandoned = _bound_printf(driver, sql, value_limit)  # replaced: not pooled again
    cursor.execute(sql)
    actual = len(cursor.description) if cursor.description is not None else None
    if statement is not None and actual is not None:
        if actual > columns:
            driver.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, sqlite_value_limit(limit, actual))
        if len(conn.sqlite_columns) >= _REMEMBERED_STATEMENTS:
            conn.sqlite_columns.clear()
        conn.sqlite_columns[statement] = actual
    reader.rows, reader.description = iter(cursor.fetchone, None), lambda: cursor.description


_REMEMBERED_STATEMENTS = 1024


def _probe_columns(driver: sqlite3.Connection, statement: str | None) -> int:
    """How many columns ``statement`` returns, compiled and not run; 8 (EXPLAIN's) when it is
    not a query or one SQLite will refuse anyway."""
    if statement is not None:
        try:
            return len(driver.execute(sqlite_probe(statement)).description or ())
        except sqlite3.Error:
            pass
    return 8


def _bound_printf(driver: sqlite3.Connection, sql: str, value_limit: int) -> bool:
    """``printf``/``format`` replaced by versions bounded to ``value_limit`` when ``sql``
    names them; True when replaced."""
    if not _SQLITE_PRINTF.search(sql):
        return False
    for name in ("printf", "format"):
        driver.create_function(name, -1, sqlite_bounded_printf(value_limit), deterministic=True)
    return True


_SQLITE_PRINTF = re.compile(r"printf|format", re.IGNORECASE)


def stop_reading(reader: RowReader, stopped_at_row_cap: bool) -> None:
    """Reading stopped before the end. After the row cap's extra row, a LIMIT row_cap + 1
    leaves only the end of the result to read; anything else is abandoned, not drained."""
    if stopped_at_row_cap and reader.bounded and next(reader.rows, _END) is _END:
        return
    reader.abandoned = reader.abandoned or reader.in_flight()  # in process: the next statement replaces it
