"""The writes of every answered question (its turn, its session, its reply digest, its
idempotency key) run on SQLite's own connection (``sqlite3``), compiled once.

Through ``Connection.execute`` each statement paid SQLAlchemy's execution context (the
compiled cache's lookup, events, parameter processing, a result object): about 35 us of CPU
a statement, four or five a question, on the conversation store's thread (issue 26: Baton's
own CPU per question). These statements bind plain strings and integers (no type needs a
bind processor), so the driver takes the values as they are; the SQL is SQLAlchemy's own,
compiled for the connection's dialect. A driver error is raised as SQLAlchemy's typed error
(``IntegrityError`` for a duplicate, ``OperationalError`` for a lock), as from
``Connection.execute``. On PostgreSQL (a backend without ``driver_writes``, ``baton.store_backends``)
the statements run through SQLAlchemy as before.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.expression import Executable

from baton.store_backends import backend_of


def execute_rows(conn: Connection, statement: Executable, rows: list[dict[str, Any]]) -> None:
    """``statement`` once per row of ``rows`` (all with the same keys), in ``conn``'s transaction."""
    if not backend_of(conn).driver_writes:
        conn.execute(statement, rows)
        return
    sql, names = _compiled(statement, conn.dialect, tuple(rows[0]))
    values = [tuple(row[name] for name in names) for row in rows]
    try:
        conn.connection.driver_connection.executemany(sql, values)  # type: ignore[union-attr]
    except sqlite3.Error as exc:
        raise DBAPIError.instance(sql, values, exc, sqlite3.Error) from exc


def first_row(conn: Connection, statement: Executable, params: dict[str, Any]) -> tuple[Any, ...] | None:
    """The first row ``statement`` (one with ``RETURNING``) returns for ``params``, or None."""
    if not backend_of(conn).driver_writes:
        row = conn.execute(statement, params).first()
        return None if row is None else tuple(row)
    sql, names = _compiled(statement, conn.dialect, ())
    values = tuple(params[name] for name in names)
    try:
        cursor = conn.connection.driver_connection.execute(sql, values)  # type: ignore[union-attr]
        try:
            found = cursor.fetchone()
        finally:
            cursor.close()
    except sqlite3.Error as exc:
        raise DBAPIError.instance(sql, values, exc, sqlite3.Error) from exc
    return None if found is None else tuple(found)


@functools.lru_cache(maxsize=64)
def _compiled(statement: Executable, dialect: Dialect, keys: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(SQL, the parameters' names in their positions) of ``statement`` for ``dialect`` with
    values for ``keys`` (an insert's columns; none: the statement's own parameters)."""
    compiled = statement.compile(dialect=dialect, column_keys=list(keys) if keys else None)  # type: ignore[attr-defined]
    if compiled.positiontup is None:
        raise TypeError(f"{dialect.name}'s SQL is not positional")
    return compiled.string, tuple(compiled.positiontup)
