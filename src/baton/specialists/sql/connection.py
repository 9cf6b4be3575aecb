"""Connections to the user's databases, read-only at the engine whatever SQL arrives.

One ``SQLConnection`` per database: an id, a SQLAlchemy URL, the sqlglot dialect and the
options an operator tunes (row/byte caps, statement timeout, EXPLAIN check, sample rows,
the data's freshness limit: ``freshness.py``).

Why sync drivers in worker threads, for every engine
    SQLite and DuckDB run inside this process: a query is CPU work that would freeze the
    event loop, so it must run in a thread anyway. For PostgreSQL (psycopg 3) and
    MySQL/MariaDB (PyMySQL) the sync drivers are used the same way, on purpose: one code
    path for the engine guards below, timeouts enforced by the server (not by cancelling an
    asyncio task, which would leave the server still working), and each connection gets its
    own thread pool sized to its SQLAlchemy pool, so at most ``pool_size`` threads per
    database ever block. Async drivers would save those threads and nothing else.

Defence in depth (the parser check in ``safety/`` always runs first; this is what holds if it
ever misses something). Every statement runs on a DBAPI connection checked out of the pool,
inside its engine's guard, re-applied for every statement: each engine module under
``engines/`` says what its guard is (a read-only transaction and a server-side timeout on
PostgreSQL and MySQL/MariaDB; a read-only file, an authorizer and an interrupt in process for
SQLite and DuckDB).

The role itself is the guard that holds whatever the SQL text: on PostgreSQL and
MySQL/MariaDB it is inspected before the first statement and a privileged role is refused
unless ``allow_privileged_role`` is set (``privileges.py``), because a read-only transaction
does not stop privileged functions (``pg_read_file``, ``lo_export``, ``LOAD_FILE``...).

No session state outlives a request on a pooled connection: every connection is reset when
it goes back to the pool (``session_reset.py``).

Schema text for the model never carries sample rows unless ``include_sample_rows`` is set:
a cell can hold text written by anyone ("ignore previous instructions ..."), which makes
sample rows a prompt-injection channel. See ``introspection.py``.
"""

from __future__ import annotations

import asyncio
import re
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL

from baton.dependency_waits import timed_in_thread
from baton.errors import ConfigurationError
from baton.response import QueryResult
from baton.specialists.sql.classify import ClassifiedError, ErrorClass, SQLExecutionError, classify_error
from baton.specialists.sql.descriptions import Descriptions, apply_descriptions, merged
from baton.specialists.sql.engines import Engine, engine_for_backend
from baton.specialists.sql.freshness import Freshness, FreshnessProbe
from baton.specialists.sql.safety.relations import RelationPolicy
from baton.specialists.sql.schema import SchemaInfo
from baton.specialists.sql.urls import database_url

NO_RESPONSE = "no_response"  # the code of the error for a network engine that never answered


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    """What an operator tunes per database. Caps bound what one query can return; the
    EXPLAIN check (off by default: it costs one extra round trip) flags full scans of tables
    with at least ``full_scan_row_threshold`` rows."""

    row_cap: int = 1000
    byte_cap: int = 4_000_000
    statement_timeout_s: float = 30.0
    slow_query_s: float = 30.0
    explain: bool = False
    full_scan_row_threshold: int = 1_000_000
    include_sample_rows: bool = False
    sample_row_count: int = 3
    schema: str | None = None  # PostgreSQL search_path / DuckDB schema; MySQL: the URL's database
    # Schemas model SQL may read besides the connection's own (safety/relations.py); secret
    # catalogs are refused whatever this says.
    allowed_schemas: tuple[str, ...] = ()
    pool_size: int = 4
    connection_retries: int = 2
    # A PostgreSQL/MySQL server that has not answered this long after the statement timeout is
    # not going to (a frozen host, a stuck proxy): the query fails as connection_error then.
    no_response_grace_s: float = 5.0
    max_prompt_tables: int = 12
    # Run model-written SQL even when the role can read/write server files, run programs,
    # signal sessions or read secrets (privileges.py). Off: such a role is refused at the first query.
    allow_privileged_role: bool = False
    # SECURITY DEFINER routines model SQL may call, as "schema.name" (routines.py: their bodies
    # run with their owners' rights, unchecked); calls to any other definer routine are refused.
    allow_functions: tuple[str, ...] = ()
    # What one query may cost (limits.py): a row over max_row_bytes is refused (resource_limit),
    # on PostgreSQL and MySQL before it crosses the wire; DuckDB's memory and threads are fixed at
    # connect; PostgreSQL's are set per statement (temp_file_limit only where the role may SET it).
    max_row_bytes: int = 16_000_000
    duckdb_memory_limit: str = "128MB"
    duckdb_threads: int = 2
    duckdb_max_temp_directory_size: str = "256MB"  # spill to a folder Baton creates and removes (limits.py)
    postgres_work_mem: str | None = "32MB"
    postgres_temp_file_limit: str | None = "256MB"  # the spill target of bench/sql_memory_bombs.py
    # How to learn when the data was last loaded, and how old it may be (freshness.py): answers
    # on older data say so. Its query is safety-checked when the connection is built.
    freshness: Freshness | None = None
    # Table and column descriptions from beside the database (descriptions.py): they fill what
    # its comments leave empty (SQLite has none). load_descriptions(path) reads a YAML file.
    descriptions: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        from baton.specialists.sql.limits import validate_limits

        if self.row_cap < 1 or self.byte_cap < 1 or self.statement_timeout_s <= 0 or self.no_response_grace_s <= 0:
            raise ConfigurationError("row_cap, byte_cap, statement_timeout_s and no_response_grace_s must be positive")
        validate_limits(self)
        if self.schema is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", self.schema):
            raise ConfigurationError(f"schema {self.schema!r} is not a plain identifier")
        if self.allow_functions:  # schema-qualified names, or a ConfigurationError now rather than at a query
            from baton.specialists.sql.routines import allowed_keys

            allowed_keys(self.allow_functions, "postgres")


def engine_of(url: str | URL) -> Engine:
    """The engine serving a SQLAlchemy URL (``engines/``); refused by name when none does."""
    return engine_for_backend(database_url(url).get_backend_name())


def dialect_of(url: str | URL) -> str:
    """The sqlglot dialect name for a SQLAlchemy URL (``mariadb`` is sqlglot's ``mysql``)."""
    return engine_of(url).name


class SQLConnection:
    """One database. Holds configuration and pools only, no per-request state, so one
    instance serves concurrent requests. Engines and threads are created on first use."""

    def __init__(self, url: str | URL, *, id: str | None = None, options: ConnectionOptions | None = None, **overrides: Any) -> None:
        self.url = database_url(url)  # postgres:// and mysql:// with the installed drivers
        self.kind = engine_of(self.url)  # the engine: everything that differs per database (engines/)
        self.dialect = self.kind.name
        self.id = id or f"{self.dialect}-{uuid.uuid4().hex[:8]}"
        self.options = replace(options or ConnectionOptions(), **overrides)
        self._engine: sa.Engine | None = None
        self._duckdb_temp: str | None = None  # DuckDB: the spill folder this connection holds (limits.py)
        self._executor: ThreadPoolExecutor | None = None
        self._setup_lock = threading.Lock()
        self._schema: SchemaInfo | None = None
        self._schema_lock = threading.Lock()
        self._descriptions: Descriptions = dict(self.options.descriptions or {})
        self.server_flavor: str | None = None  # "mariadb" | "mysql" once seen
        self.sqlite_columns: dict[str, int] = {}  # SQLite: a statement's result columns, as last run (rowstream.py)
        # the data's age, when the options say how to learn it (FreshnessQueryError for an unsafe query)
        self.freshness = FreshnessProbe(self, self.options.freshness) if self.options.freshness is not None else None

    def __repr__(self) -> str:
        return f"SQLConnection(id={self.id!r}, url={self.url.render_as_string(hide_password=True)!r})"

    # --- engine and threads ------------------------------------------------------------

    @property
    def engine(self) -> sa.Engine:
        if self._engine is None:
            with self._setup_lock:
                if self._engine is None:
                    self._engine = self.kind.create_engine(self)
        return self._engine

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._setup_lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(self.options.pool_size, thread_name_prefix=f"baton-sql-{self.id}")
        return self._executor

    async def run_in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool(), timed_in_thread(fn), *args)

    def close(self) -> None:
        """Dispose of the pool and the threads (safe to call twice)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        self.kind.close(self)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # --- queries -----------------------------------------------------------------------

    async def query(self, sql: str, **kw: Any) -> QueryResult:
        """The public path: the parser safety check, then the guarded execution.
        Raises ``UnsafeQueryError`` (never retried) or ``SQLExecutionError``."""
        from baton.specialists.sql.safety import assert_safe

        assert_safe(sql, self.dialect, relations=self.relation_policy)
        return await self.execute_readonly(sql, **kw)

    @property
    def relation_policy(self) -> RelationPolicy:
        """What model SQL may read here: the connection's own schema (PostgreSQL: the pinned
        search path; MySQL: the URL's database; DuckDB: the schema and the database's own
        catalog name; SQLite: ``main``), the ``allowed_schemas`` option, and the introspection
        views."""
        schemas = frozenset(self.kind.readable_schemas(self))
        from baton.specialists.sql.privileges import refused_definer_routines

        return RelationPolicy(schemas, self.kind.default_schema(self), definer_routines=refused_definer_routines(self))

    async def execute_readonly(
        self, sql: str, *, timeout_s: float | None = None, row_cap: int | None = None, byte_cap: int | None = None
    ) -> QueryResult:
        """Run ``sql`` under the engine-level guards only (no parser check: callers run
        ``safety.check_safety`` first; tests call this directly to prove the engine alone
        refuses writes). Connection failures are retried ``connection_retries`` times."""
        from baton.specialists.sql.execute import run_guarded
        from baton.specialists.sql.privileges import enforce_least_privilege

        opts = self.options
        timeout = timeout_s or opts.statement_timeout_s
        tries = opts.connection_retries + 1
        for attempt in range(1, tries + 1):
            try:
                await enforce_least_privilege(self, sql)  # PostgreSQL/MySQL: role and routines inspected once
                run = self.run_in_thread(run_guarded, self, sql, timeout, row_cap or opts.row_cap, byte_cap or opts.byte_cap)
                return await self._answered_within(timeout, run)
            except SQLExecutionError as err:
                if err.error_class is not ErrorClass.CONNECTION_ERROR or err.error.code == NO_RESPONSE or attempt == tries:
                    raise
                await asyncio.sleep(0.2 * attempt)
        raise AssertionError("unreachable")

    async def _answered_within(self, timeout: float, run: Awaitable[Any]) -> Any:
        """``run``, given up ``no_response_grace_s`` after the statement timeout on a network
        engine. The server's own timeout ends a slow statement; this ends the wait for a
        server that never answers at all (a frozen host, a stuck proxy), which no server-side
        setting can: a typed connection error, not retried, instead of holding the question
        until its deadline. The worker thread is left to its socket (closing a connection
        another thread is inside is unsafe); the pool gets the connection back when it fails."""
        if self.kind.in_process:
            return await run  # in-process engines: their deadline is an interrupt (module docstring)
        limit = timeout + self.options.no_response_grace_s
        try:
            return await asyncio.wait_for(run, limit)
        except TimeoutError:
            message = (f"the database did not answer within {limit:g} s (its statement timeout is "
                       f"{timeout:g} s): the server or the network to it is not responding")
            raise SQLExecutionError(ClassifiedError(ErrorClass.CONNECTION_ERROR, message, code=NO_RESPONSE)) from None

    # --- schema ------------------------------------------------------------------------

    async def schema(self, *, refresh: bool = False) -> SchemaInfo:
        """The introspected schema, cached until ``refresh=True`` (or ``refresh_schema()``)."""
        if self._schema is None or refresh:
            from baton.specialists.sql.introspection import introspect

            schema = await self.run_in_thread(self._introspect_locked, introspect, refresh)
            return schema
        return self._schema

    def _introspect_locked(self, introspect: Callable[[SQLConnection, SchemaInfo | None], SchemaInfo],
                           refresh: bool) -> SchemaInfo:
        with self._schema_lock:
            if self._schema is None or refresh:
                try:
                    schema = introspect(self, self._schema)
                    if self._descriptions:
                        apply_descriptions(schema, self._descriptions)
                    self._schema = schema
                except SQLExecutionError:
                    raise
                except Exception as exc:
                    raise SQLExecutionError(classify_error(exc, self.dialect)) from exc
            return self._schema

    async def refresh_schema(self) -> SchemaInfo:
        return await self.schema(refresh=True)

    def describe(self, descriptions: Descriptions) -> None:
        """Add descriptions from beside the database (``descriptions.py``): earlier ones and the
        database's own comments win; the cached schema gets them too."""
        with self._schema_lock:
            self._descriptions = merged(self._descriptions, descriptions)
            if self._schema is not None:
                apply_descriptions(self._schema, self._descriptions)
