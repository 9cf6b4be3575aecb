"""What a database engine is to Baton: one class per engine, the only place that knows it.

Everything in ``baton.specialists.sql`` that differs from one engine to the next (how a pool
connects, the read-only guard around a statement, how rows stream, how an error is classified,
what EXPLAIN looks like, which catalogs are secret...) is a member of ``Engine``. Code outside
``engines/`` asks the connection's engine (``conn.kind``) or ``engine_named(dialect)`` and never
compares a dialect name, so a fifth engine is one module: a subclass registered with
``baton.specialists.sql.engines.register`` (see ``docs/how-to/adding-an-engine.md``).

The members without a default are the ones every engine must answer; the rest default to what
an engine that lacks the feature does (no session reset, no role inspection...). Engines are
stateless singletons: per-connection state lives on the ``SQLConnection``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import sqlalchemy as sa

    from baton.specialists.sql.classify import ClassifiedError
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.rowstream import RowReader
    from baton.specialists.sql.schema import SchemaInfo


class Engine:
    """One database engine. Subclasses set the class attributes and override the hooks."""

    # --- identity ----------------------------------------------------------------------------
    name: ClassVar[str]  # the sqlglot dialect name, which every part of the SQL specialist speaks
    title: ClassVar[str]  # for people: "PostgreSQL"
    # other spellings people and libraries use (SQLAlchemy backends and drivers): "postgresql", "psycopg"
    aliases: ClassVar[tuple[str, ...]] = ()
    # the SQLAlchemy backend names this engine serves (``URL.get_backend_name()``)
    backends: ClassVar[tuple[str, ...]] = ()
    # URL schemes that name no driver, read as the driver Baton installs (urls.py):
    # {"postgres": "postgresql+psycopg"}
    installed_drivers: ClassVar[dict[str, str]] = {}
    # runs inside this process (SQLite, DuckDB): its deadline is an interrupt, and there is no
    # server that could stop answering (connection.py)
    in_process: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    # --- connecting --------------------------------------------------------------------------

    def create_engine(self, conn: SQLConnection) -> sa.Engine:
        """The SQLAlchemy engine (pool) for ``conn``, read-only at the engine where the engine
        allows it, with the engine's connect-time limits and pool-return reset installed."""
        raise NotImplementedError

    def close(self, conn: SQLConnection) -> None:
        """Release what ``create_engine`` took beside the pool (DuckDB's spill folder)."""

    def default_schema(self, conn: SQLConnection) -> str | None:
        """The schema an unqualified name resolves to on ``conn`` (safety/relations.py)."""
        raise NotImplementedError

    def readable_schemas(self, conn: SQLConnection) -> set[str]:
        """Schemas model SQL may read on ``conn``: the default one, the ``allowed_schemas``
        option, and whatever else the engine names a connection's own data by."""
        return {s for s in (self.default_schema(conn), *conn.options.allowed_schemas) if s}

    # --- running one statement (execute.py) ---------------------------------------------------

    def bound_rows(self, conn: SQLConnection, sql: str, limit: int) -> str | None:
        """``sql`` made to refuse, at the server, any row over ``max_row_bytes`` (None: the
        engine bounds rows another way: while reading them, or by a connect-time limit)."""
        return None

    def guard(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, timeout_s: float) -> contextlib.AbstractContextManager[None]:
        """The read-only guard and the deadline around one statement, re-applied each time."""
        raise NotImplementedError

    def open_rows(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, reader: RowReader) -> None:
        """Start ``sql`` and fill ``reader`` with a row-at-a-time iterator (rowstream.py)."""
        cursor.execute(sql)
        reader.rows, reader.description = iter(cursor.fetchone, None), lambda: cursor.description

    def column_types(self, conn: SQLConnection, raw: Any, description: Any, rows: list[list[Any]]) -> list[str]:
        """The type name of each result column, as the driver reports it."""
        return [str(d[1]) for d in description]

    # --- errors (classify.py) -----------------------------------------------------------------

    def classify(self, error: BaseException, message: str) -> ClassifiedError:
        """The driver's exception as a ``ClassifiedError`` (message: its first line)."""
        raise NotImplementedError

    # --- schema, prompts and literals (introspection.py, prompts.py, ...) ----------------------
    def reflection_schema(self, conn: SQLConnection) -> str | None:
        """The schema SQLAlchemy's reflection reads (None: the connection's default)."""
        return None

    def reflect(self, connection: sa.Connection, conn: SQLConnection, names: list[str] | None = None) -> SchemaInfo:
        """Tables, views, columns, keys and comments (``names``: only these tables):
        SQLAlchemy's bulk reflection of ``reflection_schema`` unless the engine reads its own
        catalogue (introspection.py)."""
        from baton.specialists.sql.introspection import reflect_tables

        return reflect_tables(connection, conn, names)

    def schema_versions(self, connection: sa.Connection, conn: SQLConnection) -> dict[str, str] | None:
        """Each table's catalogue version, so that a refresh reads only the tables that changed
        again; None: the engine keeps none, and a refresh reads the whole schema."""
        return None

    def row_estimates(self, connection: sa.Connection, conn: SQLConnection, schema: SchemaInfo) -> dict[str, int | None]:
        """Each table's row count as the engine's statistics know it (None: unknown)."""
        return {}


@contextlib.contextmanager
def no_guard() -> Iterator[None]:
    """For engines whose read-only state is fixed when a connection opens."""
    yield
