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
from typing import TYPE_CHECKING, Any, ClassVar

from baton.specialists.sql.engines.metric_sql import MetricSQL

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.engine import URL

    from baton.specialists.sql.classify import ClassifiedError
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.engines.safety_rules import SafetyRules
    from baton.specialists.sql.explain import FullScan
    from baton.specialists.sql.role_report import RoleReport
    from baton.specialists.sql.routines import RoutineCatalog
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

    # --- plans (explain.py) -------------------------------------------------------------------

    def explain_sql(self, sql: str) -> str:
        """The statement that shows ``sql``'s plan without running it (never ANALYZE)."""
        raise NotImplementedError

    def full_scans(self, columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
        """The full table scans in the output of ``explain_sql``."""
        raise NotImplementedError

    # --- metric SQL (semantic/) ---------------------------------------------------------------
    # how the semantic layer's metric SQL is written here: templates for what sqlglot does not
    # bridge, and what MetricFlow's SQL needs that this engine has (metric_sql.py). The default
    # renders nothing engine-specific: every such query is refused by name, never miswritten.
    metric_sql: ClassVar[MetricSQL] = MetricSQL()

    # --- schema, prompts and literals (introspection.py, prompts.py, ...) ----------------------
    # (the prompt names the engine by its ``title``)
    # E'...' strings read backslash escapes: the text the safety check inspects (literals.py)
    escape_strings: ClassVar[bool] = False
    # pseudo-columns every table has, never reported unknown (prevalidate.py): rowid, ctid...
    pseudo_columns: ClassVar[frozenset[str]] = frozenset()
    # a SELECT-list alias is a name in WHERE and later SELECT items too, not only in GROUP BY,
    # HAVING and ORDER BY (prevalidate.py)
    select_aliases_everywhere: ClassVar[bool] = False
    # OFFSET without LIMIT does not parse: such a query runs uncapped as written (rowcap.py)
    offset_needs_limit: ClassVar[bool] = False
    # the value index names the tables it reads with their reflected schema (value_index.py)
    schema_qualified_reads: ClassVar[bool] = False

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

    # --- roles and privileges (privileges.py, routines.py, grants.py) --------------------------
    # Database roles bound what a query may do: Baton reads what the connection's role may do
    # (and which definer routines it may call) before its first guarded statement, and
    # ``baton db grant`` writes a read-only one. An engine without roles (SQLite, DuckDB) opens
    # a file read-only: nothing to inspect, nothing to grant.
    has_roles: ClassVar[bool] = False
    # the server flavours the engine speaks (``server_flavor``): MySQL's "mariadb" and "mysql"
    flavors: ClassVar[tuple[str, ...]] = ()
    # an unquoted routine name folds to lower case, as the server resolves it (PostgreSQL)
    folds_unquoted_names: ClassVar[bool] = False
    # a routine name matches an ``allow_functions`` entry whatever its case (MySQL); the schema exactly
    routine_names_ignore_case: ClassVar[bool] = False
    # ``baton db grant --schema`` names a database, not a schema of the URL's database (MySQL):
    # the new role's URL names it too
    grants_on_database: ClassVar[bool] = False

    def inspect_role(self, conn: SQLConnection) -> RoleReport | None:
        """What the role ``conn`` logs in as may do, read on one pooled connection (sync);
        None where the engine has no roles."""
        return None

    def inspect_routines(self, conn: SQLConnection) -> RoutineCatalog | None:
        """The definer routines the role may execute (``routines.py``); None where the engine
        has none."""
        return None

    def role_restore(self, cursor: Any) -> str | None:
        """Asked before an inspection on a pooled connection (``role_report.on_pooled_connection``):
        the statement that puts the session's role back after it, where the inspection sets a
        role the pool's reset keeps (MariaDB's ``SET ROLE``); None: nothing to put back."""
        return None

    def server_flavor(self, version: object) -> str | None:
        """Which of ``flavors`` a server is, from what ``SELECT VERSION()`` answered."""
        return None

    def grant_statements(self, url: URL, schema: str, role: str, password: str | None, *, flavor: str | None, host: str,
                         statement_timeout_s: int, connection_limit: int, work_mem: str, temp_file_limit: str) -> list[str]:
        """The statements that create (or reset) ``role`` as a read-only role on ``schema``
        (``grants.py`` checks the names first). Refused by name where the engine has no roles."""
        raise self._no_roles()

    def grant_scope_exists(self, cursor: Any, schema: str) -> bool:
        """Whether what ``baton db grant --schema`` names exists, asked before anything runs."""
        raise self._no_roles()

    def grant_account_is_new(self, cursor: Any, account: tuple[str, str]) -> bool:
        """True when applying the grants creates ``account`` (user, host) and a failure must
        drop it again (``drop_grant_account``): the engine commits each statement by itself."""
        return False

    def drop_grant_account(self, cursor: Any, account: tuple[str, str]) -> None:
        """Undo ``account``'s creation after a failed ``baton db grant --apply``."""

    def definer_revokes(self, engine: sa.Engine, schema: str) -> list[str]:
        """``REVOKE EXECUTE ... FROM PUBLIC`` for each definer routine a new role on ``schema``
        could call through PUBLIC whose owner holds more than it (``grants.py``)."""
        return []

    def _no_roles(self) -> Exception:
        from baton.errors import ConfigurationError

        return ConfigurationError(f"{self.name} has no roles: Baton opens the file read-only (nothing to grant)")

    # --- safety (safety/) ----------------------------------------------------------------------
    # What the parser-side safety check knows of this engine: its own parser or lexical rules,
    # secret catalogs, introspection allowlist, functions that are refused or run SQL given as
    # text, how a definer routine's call resolves. One frozen value of tables (``SafetyRules``,
    # engines/safety_rules.py) rather than a hook per rule: the check runs on every query,
    # resolves the engine once and then only reads precomputed sets. No default: an engine must
    # say what is secret on it before model SQL may run there (a subclass inherits its parent's).
    safety: ClassVar[SafetyRules]
