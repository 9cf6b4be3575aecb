"""Pooled connections go back to the pool as clean as new: no session state outlives a request.

A read-only transaction that is rolled back undoes data changes, not session state. Measured
on the test servers with the parser check bypassed: a PostgreSQL session advisory lock
(``pg_advisory_lock``) survives the rollback; on MariaDB ``GET_LOCK`` locks, user variables
(``@v := 5``), session variables (``SET @@session.sql_select_limit = 1`` silently truncated
every later result) and prepared statements survive, and temporary tables created on the
connection shadow real tables for whoever gets it next. So every connection is reset when it
is checked back in (SQLAlchemy's pool ``reset`` event, which runs for raw connections and
SQLAlchemy connections alike):

- PostgreSQL: ``DISCARD ALL`` (outside a transaction, as it must run): releases advisory
  locks, drops temporary tables, deallocates prepared statements (psycopg notices and clears
  its cache), resets session settings to the connection's start-up values (our
  ``search_path`` option survives), ``UNLISTEN *``. It does not reset the ``random()``
  generator: after ``setseed(0.5)`` the next request on the connection would draw a sequence
  anyone can replay. So the generator is reseeded from ``secrets`` as well (``setseed``
  takes a double, so 52 bits of seed, against the 128 a new session draws from the OS: not a
  key generator either way, and unpredictable to the next request). What ``DISCARD ALL``
  cannot undo (a ``LOAD``-ed library, dblink connections) needs statements the parser
  refuses and superuser rights.
- MySQL/MariaDB: the protocol's ``COM_RESET_CONNECTION`` (MySQL 5.7.3+, MariaDB 10.2.4+):
  the server's own complete reset of locks, user and session variables, temporary tables
  and prepared statements, without re-authenticating. Measured ~0.03 ms, against ~16 ms for
  a fresh connection per query (NullPool); MariaDB 10.11 cannot list a session's temporary
  tables, so a hand-written reset would be incomplete. PyMySQL has no public call for it, so
  its command API is used, and the connect-time settings the reset clears (character set,
  ``sql_mode``/``init_command`` if configured, autocommit off) are sent again. With any
  other MySQL driver, ``engines/mysql.py`` pools nothing (a new session per query). The reset also
  restores the ``RAND()`` seeds (``@@rand_seed1``/``@@rand_seed2``; measured on 10.11).
  It does not restore what the login took from the account (measured on MariaDB 10.11): the
  session's ``max_statement_time`` falls back to the global value, and the session leaves
  the account's ``MAX_USER_CONNECTIONS`` count (a reset session no longer counts: a third
  login of a two-connection account then succeeds). Both are read at connect: a login
  ``max_statement_time`` is set again after each reset; a connection whose account limits
  its connections is closed at check-in instead of reset (a new login each request, which
  is what that limit costs), so that the account's limit keeps holding.
- DuckDB: a guarded statement creates no objects (DuckDB's own parser admits only a SELECT,
  ``execute.py``), but ``SELECT setseed(0.5)`` is a SELECT, and the seed is per connection:
  reseeded from ``secrets`` on check-in, as on PostgreSQL.
- SQLite has no SQL function that sets its generator (``random()`` draws from SQLite's own
  process-wide source), and its authorizer allows only reads: nothing to reset.

If a reset fails, the hook raises and SQLAlchemy closes the connection instead of pooling it
(fail closed: the next request gets a new session).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

_COM_RESET_CONNECTION = 0x1F  # MySQL client/server protocol command byte


def install_session_reset(engine: sa.Engine, reset: Callable[[Any], None],
                          after: Callable[[Any, dict[str, Any]], None] | None = None) -> None:
    """Run ``reset`` on every connection of ``engine`` when it returns to the pool, then
    ``after(connection, record.info)`` (what the engine restores that its reset clears)."""

    def on_reset(dbapi_connection: Any, record: Any, state: Any) -> None:
        if getattr(state, "terminate_only", False):
            return  # the connection is being closed anyway
        reset(dbapi_connection)
        if after is not None and record is not None:
            after(dbapi_connection, record.info)

    sa.event.listen(engine, "reset", on_reset)


def install_mysql_login_limits(engine: sa.Engine) -> None:
    """Remember what each login took from the account; close, instead of resetting, a
    connection whose account counts its connections (module docstring)."""
    sa.event.listen(engine, "connect", _remember_mysql_login)
    sa.event.listen(engine, "checkin", _close_if_account_counts_connections)


_LOGIN = "baton_login_limits"


def _remember_mysql_login(dbapi_connection: Any, record: Any) -> None:
    """What the login took from the account, where it differs from the server's globals."""
    login: dict[str, str] = {}
    with dbapi_connection.cursor() as cursor:
        for name in ("max_statement_time", "max_user_connections"):
            cursor.execute(f"SHOW SESSION VARIABLES LIKE '{name}'")
            session = cursor.fetchone()
            cursor.execute(f"SHOW GLOBAL VARIABLES LIKE '{name}'")
            global_ = cursor.fetchone()
            if session is not None and global_ is not None and session[1] != global_[1]:
                login[name] = session[1]
    record.info[_LOGIN] = login


def restore_mysql_login(connection: Any, info: dict[str, Any]) -> None:
    """After ``COM_RESET_CONNECTION``: the account's ``max_statement_time`` again."""
    statement_time = info.get(_LOGIN, {}).get("max_statement_time")
    if statement_time is not None:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION max_statement_time = %s", (float(statement_time),))


def _close_if_account_counts_connections(dbapi_connection: Any, record: Any) -> None:
    if dbapi_connection is not None and record is not None and "max_user_connections" in record.info.get(_LOGIN, {}):
        record.invalidate()  # closed now; the pool logs in again for the next request


def reset_postgres_session(connection: Any) -> None:
    """``DISCARD ALL`` on a psycopg connection, leaving it idle and non-autocommit."""
    connection.rollback()
    connection.autocommit = True
    try:
        connection.execute("DISCARD ALL")
        connection.execute("SELECT setseed(%s)", (unpredictable_seed(),))
    finally:
        connection.autocommit = False


def reset_duckdb_session(connection: Any) -> None:
    """A new ``random()`` seed on a DuckDB connection (the only state a SELECT leaves)."""
    connection.execute("SELECT setseed(?)", [unpredictable_seed()]).fetchall()


def unpredictable_seed() -> float:
    """A ``setseed`` argument in [-1, 1) drawn from the OS's generator."""
    return secrets.randbits(52) / 2**51 - 1.0


def reset_mysql_session(connection: Any) -> None:
    """``COM_RESET_CONNECTION`` on a PyMySQL connection, then its connect-time settings."""
    connection.rollback()
    connection._execute_command(_COM_RESET_CONNECTION, b"")
    connection._read_ok_packet()
    connection.set_character_set(connection.charset, connection.collation)
    with connection.cursor() as cursor:
        if connection.sql_mode is not None:
            cursor.execute("SET sql_mode=%s", (connection.sql_mode,))
        if connection.init_command is not None:
            cursor.execute(connection.init_command)
    connection.autocommit(connection.autocommit_mode)
