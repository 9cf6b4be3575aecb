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
import functools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from baton.specialists.sql.classify import ClassifiedError, ErrorClass, SQLExecutionError, classify_mysql
from baton.specialists.sql.engines.base import Engine
from baton.specialists.sql.engines.metric_sql import MetricSQL
from baton.specialists.sql.engines.mysql_flavors import MARIADB, MYSQL, flavor_of_version
from baton.specialists.sql.engines.safety_rules import INFORMATION_SCHEMA_NAMES, LexicalRules, SafetyRules
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
    from sqlalchemy.engine import URL

    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.role_report import RoleReport
    from baton.specialists.sql.routines import RoutineCatalog
    from baton.specialists.sql.rowstream import RowReader
    from baton.specialists.sql.schema import SchemaInfo

# No ANSI_QUOTES ("..." stays a string), no NO_BACKSLASH_ESCAPES, no PIPES_AS_CONCAT: the
# session reads quotes, backslashes and || as the safety check's lexer does.
MYSQL_SQL_MODE = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
_WARN_VALUE_TOO_LARGE = 1301  # "Result of repeat() was larger than max_allowed_packet"


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
        names = _field_type_names()
        return [names.get(d[1], str(d[1])) for d in description]

    def classify(self, error: BaseException, message: str) -> ClassifiedError:
        return classify_mysql(error, message)

    def explain_sql(self, sql: str) -> str:
        return f"EXPLAIN {sql}"

    def full_scans(self, columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
        return mysql_full_scans(columns, rows)

    # --- metric SQL (semantic/) ---
    metric_sql = MetricSQL(
        week_start=("DATE_FORMAT(DATE_SUB(CAST(SUBSTR({c}, 1, 10) AS DATE), "
                    "INTERVAL WEEKDAY(CAST(SUBSTR({c}, 1, 10) AS DATE)) DAY), '%Y-%m-%d')"),
        iso_weekday="(WEEKDAY({c}) + 1)",
        day_of_year="DAYOFYEAR({c})",
        typed_dates=True,  # no FULL OUTER JOIN, no ordered-set percentile (MariaDB's are window functions only)
    )

    # --- schema, prompts and literals (introspection.py, prevalidate.py, rowcap.py, ...) ---
    offset_needs_limit = True

    def row_estimates(self, connection: sa.Connection, conn: SQLConnection, schema: SchemaInfo) -> dict[str, int | None]:
        return mysql_row_estimates(connection, conn)

    # --- roles and privileges (role_mysql.py, routines.py, grants.py) ---
    has_roles = True
    flavors = (MARIADB, MYSQL)
    routine_names_ignore_case = True  # database names may not (lower_case_table_names): matched exactly
    grants_on_database = True

    def inspect_role(self, conn: SQLConnection) -> RoleReport | None:
        from baton.specialists.sql.role_mysql import inspect_mysql

        return inspect_mysql(conn)

    def inspect_routines(self, conn: SQLConnection) -> RoutineCatalog | None:
        from baton.specialists.sql.role_report import on_pooled_connection
        from baton.specialists.sql.routines import mysql_routines

        return on_pooled_connection(conn, mysql_routines)

    def role_restore(self, cursor: Any) -> str | None:
        """The inspections ``SET ROLE`` to read each role's grants, which ``COM_RESET_CONNECTION``
        keeps (measured on MariaDB 10.11)."""
        from baton.specialists.sql.role_mysql import role_restore_statement

        cursor.execute("SELECT CURRENT_ROLE(), VERSION()")
        row = cursor.fetchone() or (None, "")
        return role_restore_statement(row[0], row[1])

    def server_flavor(self, version: object) -> str | None:
        return flavor_of_version(version)

    def grant_statements(self, url: URL, schema: str, role: str, password: str | None, *, flavor: str | None, host: str,
                         statement_timeout_s: int, connection_limit: int, work_mem: str, temp_file_limit: str) -> list[str]:
        """``schema`` is a database; ``flavor`` by default what the URL says (``mariadb://``: MariaDB)."""
        from baton.errors import ConfigurationError
        from baton.specialists.sql.grants import mysql_grant_statements

        if password is not None and "\\" in password:
            raise ConfigurationError("a backslash in a MySQL/MariaDB password reads differently under "
                                     "NO_BACKSLASH_ESCAPES; choose a password without one")
        if not re.fullmatch(r"[A-Za-z0-9_.%:\-]+", host):
            raise ConfigurationError(f"host {host!r} is not a plain host name, address or pattern")
        flavor = flavor or (MARIADB if url.get_backend_name() == MARIADB else MYSQL)
        if flavor not in self.flavors:
            raise ConfigurationError(f"flavor {flavor!r}: use mariadb or mysql")
        return mysql_grant_statements(schema, role, password, host, flavor, statement_timeout_s)

    def grant_scope_exists(self, cursor: Any, schema: str) -> bool:
        cursor.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (schema,))
        return cursor.fetchone() is not None

    def grant_account_is_new(self, cursor: Any, account: tuple[str, str]) -> bool:
        cursor.execute("SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s", account)
        return cursor.fetchone() is None

    def drop_grant_account(self, cursor: Any, account: tuple[str, str]) -> None:
        cursor.execute("DROP USER IF EXISTS %s@%s", account)

    def definer_revokes(self, engine: sa.Engine, schema: str) -> list[str]:
        from baton.specialists.sql.grants import mysql_definer_revokes

        return mysql_definer_revokes(engine)

    # --- safety (safety/) ----------------------------------------------------------------------
    safety = SafetyRules(
        # no parser to ask: the server's lexical rules under MYSQL_SQL_MODE (safety/lexical.py):
        # ' and " are strings with backslash escapes, ` quotes names; # and "-- " start comments,
        # /*! ... */ runs as SQL, and a backslash outside a literal has no meaning sqlglot shares
        lexical=LexicalRules(quotes={"'": ("'", True), '"': ('"', True), "`": ("`", False)}, hash_comments=True,
                             spaced_dash_comments=True, executable_comments=("/*!", "/*M!"),
                             backslash_outside_strings=True),
        folds_case=True,  # sqlglot keeps a name's case; the server compares most without it
        secret_relations={"mysql": None, "performance_schema": None, "sys": None,  # whole schemas
                          "information_schema": frozenset({"processlist", "innodb_trx", "innodb_locks",
                                                           "innodb_lock_waits", "user_variables", "global_variables",
                                                           "session_variables", "system_variables"})},
        introspection={"information_schema": INFORMATION_SCHEMA_NAMES},
        # SQL SECURITY DEFINER routines, found in sqlglot's tokens
        definer_call="baton.specialists.sql.safety.definer:mysql_definer_call",
    )


@functools.cache
def _field_type_names() -> dict[int, str]:
    """PyMySQL's field type codes by name, read once (not on every query)."""
    from pymysql.constants import FIELD_TYPE

    return {v: k for k, v in vars(FIELD_TYPE).items() if isinstance(v, int)}


def _refuse_truncated_values(driver: Any) -> None:
    """A value the server would not build within ``max_allowed_packet`` arrives as NULL with
    warning 1301: not an answer to the question asked."""
    for _level, code, message in driver.show_warnings() or ():
        if code == _WARN_VALUE_TOO_LARGE:
            raise SQLExecutionError(ClassifiedError(ErrorClass.RESOURCE_LIMIT, str(message), str(code)))


ENGINE = MySQLEngine()
