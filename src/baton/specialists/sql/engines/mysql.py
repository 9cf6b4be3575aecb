"""MySQL and MariaDB, over PyMySQL (sync, in the connection's worker threads).

Each statement runs after ``SET SESSION TRANSACTION READ ONLY`` (the session characteristic: a
bare ``START TRANSACTION READ ONLY`` lets DDL through on MariaDB because DDL commits
implicitly; measured on 10.11) and ``START TRANSACTION READ ONLY``, under the server's
statement timeout: ``max_execution_time`` (ms) on MySQL, ``max_statement_time`` (s) on MariaDB,
whichever the server is (read once per connection from ``VERSION()``). PyMySQL does not enable
multi-statements. Rows stream through an unbuffered cursor, each packet bounded before it is
read (``limits.py``), and ``COM_RESET_CONNECTION`` cleans a connection going back to the pool
(``session_reset.py``). Another MySQL driver gets none of that pooling: a new session per
query.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from baton.specialists.sql.classify import ClassifiedError, ErrorClass, SQLExecutionError, classify_mysql
from baton.specialists.sql.engines.base import Engine
from baton.specialists.sql.explain import FullScan, mysql_full_scans
from baton.specialists.sql.introspection import mysql_row_estimates
from baton.specialists.sql.limits import row_bounded_connection
from baton.specialists.sql.session_reset import (
    install_mysql_login_limits,
    install_session_reset,
    reset_mysql_session,
    restore_mysql_login,
)

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.rowstream import RowReader
    from baton.specialists.sql.schema import SchemaInfo

# No ANSI_QUOTES ("..." stays a string), no NO_BACKSLASH_ESCAPES, no PIPES_AS_CONCAT: the
# session reads quotes, backslashes and || as the safety check's lexer does.
MYSQL_SQL_MODE = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
MARIADB = "mariadb"  # the server flavour that spells its statement timeout differently
_WARN_VALUE_TOO_LARGE = 1301  # "Result of repeat() was larger than max_allowed_packet"


def flavor_of_version(version: object) -> str:
    """``"mariadb"`` or ``"mysql"``, from what ``SELECT VERSION()`` answered."""
    return MARIADB if MARIADB in str(version).lower() else "mysql"


class MySQLEngine(Engine):
    name = "mysql"
    title = "MySQL/MariaDB"
    aliases = ("mariadb", "pymysql", "aiomysql")
    backends = ("mysql", "mariadb")
    installed_drivers = {"mysql": "mysql+pymysql", "mariadb": "mariadb+pymysql"}

    def create_engine(self, conn: SQLConnection) -> sa.Engine:
        # the quoting and escaping rules the safety check's lexer assumes (safety/lexical.py)
        connect_args: dict[str, Any] = {"connect_timeout": 10, "sql_mode": MYSQL_SQL_MODE}
        if conn.url.get_driver_name() != "pymysql":  # no session reset for other drivers: a new session per query
            return sa.create_engine(conn.url, connect_args=connect_args, poolclass=sa.pool.NullPool)
        engine = sa.create_engine(conn.url, connect_args=connect_args, pool_size=conn.options.pool_size, max_overflow=0,
                                  pool_pre_ping=True, pool_recycle=1800)
        limit = conn.options.max_row_bytes

        def do_connect(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
            return row_bounded_connection(limit, *cargs, **cparams)  # every packet bounded (limits.py)

        sa.event.listen(engine, "do_connect", do_connect)
        install_session_reset(engine, reset_mysql_session, restore_mysql_login)
        install_mysql_login_limits(engine)
        return engine

    def default_schema(self, conn: SQLConnection) -> str | None:
        return conn.url.database

    @contextlib.contextmanager
    def guard(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, timeout_s: float) -> Iterator[None]:
        if conn.server_flavor is None:
            cursor.execute("SELECT VERSION()")
            conn.server_flavor = flavor_of_version(cursor.fetchone()[0])
        if conn.server_flavor == MARIADB:
            cursor.execute(f"SET SESSION max_statement_time = {max(0.001, timeout_s):.3f}")
        else:
            cursor.execute(f"SET SESSION max_execution_time = {max(1, int(timeout_s * 1000))}")
        cursor.execute("SET SESSION TRANSACTION READ ONLY")
        cursor.execute("START TRANSACTION READ ONLY")
        yield

    def open_rows(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, reader: RowReader) -> None:
        """PyMySQL's unbuffered ``SSCursor``: one row packet at a time. At the end, warning 1301
        (a value the server replaced by NULL) becomes a ``resource_limit`` error."""
        import pymysql

        driver = raw.dbapi_connection
        if not isinstance(driver, pymysql.connections.Connection):  # another driver: buffered, NullPool
            super().open_rows(conn, raw, cursor, sql, reader)
            return
        unbuffered = driver.cursor(pymysql.cursors.SSCursor)
        reader.in_flight = getattr(driver, "result_in_flight", lambda: True)
        reader.abandon = getattr(driver, "abandon_result", lambda: None)
        unbuffered.execute(sql)

        def rows() -> Iterator[Any]:
            yield from iter(unbuffered.fetchone, None)
            if unbuffered.warning_count:
                _refuse_truncated_values(driver)

        reader.rows, reader.description = rows(), lambda: unbuffered.description

    def column_types(self, conn: SQLConnection, raw: Any, description: Any, rows: list[list[Any]]) -> list[str]:
        from pymysql.constants import FIELD_TYPE

        by_code = {v: k for k, v in vars(FIELD_TYPE).items() if isinstance(v, int)}
        return [by_code.get(d[1], str(d[1])) for d in description]

    def classify(self, error: BaseException, message: str) -> ClassifiedError:
        return classify_mysql(error, message)

    def explain_sql(self, sql: str) -> str:
        return f"EXPLAIN {sql}"

    def full_scans(self, columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
        return mysql_full_scans(columns, rows)

    # --- schema, prompts and literals (introspection.py, prevalidate.py, rowcap.py, ...) ---
    def row_estimates(self, connection: sa.Connection, conn: SQLConnection, schema: SchemaInfo) -> dict[str, int | None]:
        return mysql_row_estimates(connection, conn)


def _refuse_truncated_values(driver: Any) -> None:
    """A value the server would not build within ``max_allowed_packet`` arrives as NULL with
    warning 1301: not an answer to the question asked."""
    for _level, code, message in driver.show_warnings() or ():
        if code == _WARN_VALUE_TOO_LARGE:
            raise SQLExecutionError(ClassifiedError(ErrorClass.RESOURCE_LIMIT, str(message), str(code)))


ENGINE = MySQLEngine()
