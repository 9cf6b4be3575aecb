"""SQLite: a file opened read-only inside this process.

The file is opened with ``mode=ro`` and ``PRAGMA query_only``; around each statement an
authorizer allows only reads (no ATTACH, no PRAGMA, no writes, no ``load_extension``) and a
progress handler aborts the statement at its deadline. The stdlib driver refuses more than one
statement per call. A row is bounded by SQLite's own value-length limit, set per statement
from its column count (``limits.py``).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from baton.errors import ConfigurationError
from baton.specialists.sql.classify import ClassifiedError, classify_sqlite
from baton.specialists.sql.engines.base import Engine
from baton.specialists.sql.engines.metric_sql import MetricSQL
from baton.specialists.sql.engines.safety_rules import LexicalRules, SafetyRules
from baton.specialists.sql.explain import FullScan, sqlite_full_scans
from baton.specialists.sql.introspection import sqlite_row_counts
from baton.specialists.sql.limits import sqlite_bounded_printf, sqlite_value_limit
from baton.specialists.sql.rowcap import sqlite_probe, trimmed_statement

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.rowstream import RowReader
    from baton.specialists.sql.schema import SchemaInfo

_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile"}
_REMEMBERED_STATEMENTS = 1024
_PRINTF = re.compile(r"printf|format", re.IGNORECASE)


def sqlite_read_only_authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    """SQLite's own gate, consulted while each statement compiles: reads only."""
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class SQLiteEngine(Engine):
    name = "sqlite"
    title = "SQLite"
    aliases = ("sqlite3",)
    backends = ("sqlite",)
    in_process = True

    def create_engine(self, conn: SQLConnection) -> sa.Engine:
        path = conn.url.database
        if not path or path == ":memory:":
            raise ConfigurationError("SQLite connections need a database file (a read-only in-memory database is empty)")
        # a real file URI: "?", "#" and "%" in the path are percent-encoded, not read as URI syntax
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        limit = conn.options.max_row_bytes

        def connect() -> sqlite3.Connection:
            raw = sqlite3.connect(uri, uri=True, check_same_thread=False)
            raw.execute("PRAGMA query_only = ON")
            raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)  # no value over max_row_bytes (limits.py)
            return raw

        return sa.create_engine("sqlite://", creator=connect, pool_size=conn.options.pool_size, max_overflow=0,
                                poolclass=sa.pool.QueuePool)

    def default_schema(self, conn: SQLConnection) -> str | None:
        return "main"

    @contextlib.contextmanager
    def guard(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, timeout_s: float) -> Iterator[None]:
        driver: sqlite3.Connection = raw.dbapi_connection
        deadline = time.monotonic() + timeout_s
        driver.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 2000)
        driver.set_authorizer(sqlite_read_only_authorizer)
        try:
            yield
        finally:
            driver.set_authorizer(None)
            driver.set_progress_handler(None, 0)
            driver.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, conn.options.max_row_bytes)  # the connection's own limit

    def open_rows(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, reader: RowReader) -> None:
        """The statement under a value-length limit of ``max_row_bytes / columns``
        (``limits.py``), so that no row it returns is over ``max_row_bytes``.

        The column count of a statement run before is remembered (``conn.sqlite_columns``):
        learning it means compiling the statement once more (``sqlite_probe``), and on a
        server each compile calls the read-only authorizer, a Python callback, several times:
        each call waits for the interpreter lock while the event loop holds it. If the schema
        changed since, the count is corrected from the statement's own description as soon as
        it runs and the limit tightened for its remaining rows."""
        driver: sqlite3.Connection = raw.dbapi_connection
        statement = sql if reader.bounded else trimmed_statement(sql, self.name)  # a capped query is trimmed already
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

    def column_types(self, conn: SQLConnection, raw: Any, description: Any, rows: list[list[Any]]) -> list[str]:
        """SQLite reports no column types: the storage class of the first non-null value."""
        return [_storage_class(rows, i) for i in range(len(description))]

    def classify(self, error: BaseException, message: str) -> ClassifiedError:
        return classify_sqlite(error, message)

    def explain_sql(self, sql: str) -> str:
        return f"EXPLAIN QUERY PLAN {sql}"

    def full_scans(self, columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
        return sqlite_full_scans(columns, rows)

    # --- metric SQL (semantic/) ---
    metric_sql = MetricSQL(
        week_start="DATE(SUBSTR({c}, 1, 10), '-6 days', 'weekday 1')",
        iso_weekday="((CAST(STRFTIME('%w', {c}) AS INTEGER) + 6) % 7 + 1)",
        day_of_year="CAST(STRFTIME('%j', {c}) AS INTEGER)",
        millisecond_format="%Y-%m-%d %H:%M:%f",  # %f: SS.SSS
        full_outer_join=True,  # 3.39 and later
    )

    # --- schema, prompts and literals (introspection.py, prevalidate.py, rowcap.py, ...) ---
    pseudo_columns = frozenset({"rowid", "oid", "_rowid_"})
    select_aliases_everywhere = True
    offset_needs_limit = True

    def row_estimates(self, connection: sa.Connection, conn: SQLConnection, schema: SchemaInfo) -> dict[str, int | None]:
        """``sqlite_stat1`` when ``ANALYZE`` has run, else a bounded count."""
        return sqlite_row_counts(connection, schema)

    # --- safety (safety/) ----------------------------------------------------------------------
    safety = SafetyRules(
        # no parser to ask: SQLite's lexical rules (safety/lexical.py): ' strings without backslash
        # escapes; ", ` and [...] quote names
        lexical=LexicalRules(quotes={"'": ("'", False), '"': ('"', False), "`": ("`", False), "[": ("]", False)}),
        denied_functions={"eval": "runs SQL given as a string, which this check cannot inspect"},  # the shell's eval()
        ordinary_functions=frozenset({"glob"}),  # a pattern match here
        folds_case=True,  # names compare without case
        # the paths of the database files
        secret_relations={None: frozenset({"pragma_database_list"}), "main": frozenset({"pragma_database_list"})},
        introspection={"main": frozenset({"sqlite_schema", "sqlite_master"})},
    )


def _storage_class(rows: list[list[Any]], index: int) -> str:
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
    if not _PRINTF.search(sql):
        return False
    for name in ("printf", "format"):
        driver.create_function(name, -1, sqlite_bounded_printf(value_limit), deterministic=True)
    return True


ENGINE = SQLiteEngine()
