"""PostgreSQL, over psycopg 3 (sync, in the connection's worker threads).

Each statement runs in a ``SET TRANSACTION READ ONLY`` transaction with a local
``statement_timeout`` (and ``work_mem``, ``temp_file_limit``: ``limits.py``), over the extended
protocol, streamed in single-row mode, which like a prepared statement the server refuses to
hold more than one command (``COMMIT; DROP ...`` cannot escape the read-only transaction).
Rolled back after, and ``DISCARD ALL`` when the connection goes back to the pool
(``session_reset.py``). The search path is pinned at connect, so an unqualified name is a
catalog relation or the workspace's schema (``safety/relations.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa

from baton.specialists.sql.classify import ClassifiedError, classify_postgres
from baton.specialists.sql.engines.base import Engine
from baton.specialists.sql.engines.metric_sql import MetricSQL
from baton.specialists.sql.engines.safety_rules import INFORMATION_SCHEMA_NAMES, SafetyRules
from baton.specialists.sql.explain import FullScan, postgres_full_scans
from baton.specialists.sql.introspection import postgres_fingerprints, postgres_row_estimates
from baton.specialists.sql.limits import postgres_statement_settings
from baton.specialists.sql.rowcap import postgres_row_guard, postgres_single_select
from baton.specialists.sql.session_reset import install_session_reset, reset_postgres_session

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.role_report import RoleReport
    from baton.specialists.sql.routines import RoutineCatalog
    from baton.specialists.sql.rowstream import RowReader
    from baton.specialists.sql.schema import SchemaInfo


class PostgresEngine(Engine):
    name = "postgres"
    title = "PostgreSQL"
    aliases = ("postgresql", "pg", "psycopg", "psycopg2")
    backends = ("postgresql",)
    installed_drivers = {"postgres": "postgresql+psycopg", "postgresql": "postgresql+psycopg"}

    def create_engine(self, conn: SQLConnection) -> sa.Engine:
        connect_args = {
            "connect_timeout": 10,
            # the search path is pinned: an unqualified name is a catalog relation or the workspace's (safety/relations.py)
            "options": f"-c search_path={self.default_schema(conn)}",
            "application_name": "baton",
        }
        engine = sa.create_engine(conn.url, connect_args=connect_args, pool_size=conn.options.pool_size, max_overflow=0,
                                  pool_pre_ping=True, pool_recycle=1800)
        install_session_reset(engine, reset_postgres_session)
        return engine

    def default_schema(self, conn: SQLConnection) -> str | None:
        return conn.options.schema or "public"

    def bound_rows(self, conn: SQLConnection, sql: str, limit: int) -> str | None:
        """One SELECT, as PostgreSQL's own parser reads it, wrapped in the server-side row guard (``limits.py``)."""
        query = postgres_single_select(sql)
        return None if query is None else postgres_row_guard(query, conn.options.max_row_bytes, limit)

    @contextlib.contextmanager
    def guard(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, timeout_s: float) -> Iterator[None]:
        cursor.execute("SET TRANSACTION READ ONLY")
        may_set = bool(conn.options.postgres_temp_file_limit) and _may_set_temp_file_limit(raw, cursor)
        chosen = postgres_statement_settings(conn.options, timeout_s, may_set,  # limits.py
                                             raw.dbapi_connection.info.server_version)
        cursor.execute("SELECT " + ", ".join(f"set_config('{name}', %s, true)" for name in chosen), list(chosen.values()))
        yield

    def open_rows(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, reader: RowReader) -> None:
        """libpq single-row mode over the extended protocol (one command per statement)."""
        from psycopg.pq import TransactionStatus

        driver = raw.dbapi_connection

        def description() -> Any:
            if cursor.description is not None:
                return cursor.description
            return _describe(driver, sql)  # no row arrived: the result's shape only

        def in_flight() -> bool:
            return driver.closed or driver.info.transaction_status is TransactionStatus.ACTIVE

        reader.rows, reader.description, reader.in_flight = cursor.stream(sql), description, in_flight

    def column_types(self, conn: SQLConnection, raw: Any, description: Any, rows: list[list[Any]]) -> list[str]:
        """Type names from the OIDs psycopg reports."""
        registry = raw.dbapi_connection.adapters.types
        names = []
        for d in description:
            info = registry.get(d[1])
            names.append(info.name if info is not None else str(d[1]))
        return names

    def classify(self, error: BaseException, message: str) -> ClassifiedError:
        return classify_postgres(error, message)

    def explain_sql(self, sql: str) -> str:
        return f"EXPLAIN (FORMAT JSON) {sql}"

    def full_scans(self, columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
        return postgres_full_scans(columns, rows)

    # --- metric SQL (semantic/) ---
    metric_sql = MetricSQL(
        week_start="TO_CHAR(DATE_TRUNC('week', CAST(SUBSTR({c}, 1, 10) AS DATE)), 'YYYY-MM-DD')",
        iso_weekday="CAST(EXTRACT(isodow FROM {c}) AS INTEGER)",
        day_of_year="CAST(EXTRACT(doy FROM {c}) AS INTEGER)",
        day_series="GENERATE_SERIES(b.lo, b.hi, INTERVAL '1 day')",
        typed_union_nulls=True,  # two bare NULLs in a UNION's column are text
        full_outer_join=True, typed_dates=True, timestamp_comparisons=True, percentile=True,
        date_trunc=True, spine_arithmetic=True, subdaily_spine=True,  # no approximate percentile (MetricFlow has none here)
    )

    # --- schema, prompts and literals (introspection.py, prevalidate.py, rowcap.py, ...) ---
    escape_strings = True
    pseudo_columns = frozenset({"ctid", "oid", "xmin", "xmax", "cmin", "cmax", "tableoid"})
    schema_qualified_reads = True

    def reflection_schema(self, conn: SQLConnection) -> str | None:
        return conn.options.schema

    def schema_versions(self, connection: sa.Connection, conn: SQLConnection) -> dict[str, str] | None:
        """The transaction ids that last wrote each table's catalogue rows (one query)."""
        return postgres_fingerprints(connection, conn)

    def row_estimates(self, connection: sa.Connection, conn: SQLConnection, schema: SchemaInfo) -> dict[str, int | None]:
        return postgres_row_estimates(connection, conn)

    # --- roles and privileges (role_postgres.py, routines.py, grants.py) ---
    has_roles = True
    folds_unquoted_names = True

    def inspect_role(self, conn: SQLConnection) -> RoleReport | None:
        from baton.specialists.sql.role_postgres import inspect_postgres

        return inspect_postgres(conn)

    def inspect_routines(self, conn: SQLConnection) -> RoutineCatalog | None:
        from baton.specialists.sql.role_report import on_pooled_connection
        from baton.specialists.sql.routines import postgres_routines

        return on_pooled_connection(conn, postgres_routines)

    def grant_statements(self, url: URL, schema: str, role: str, password: str | None, *, flavor: str | None, host: str,
                         statement_timeout_s: int, connection_limit: int, work_mem: str, temp_file_limit: str) -> list[str]:
        from baton.errors import ConfigurationError
        from baton.specialists.sql.grants import postgres_grant_statements

        if not url.database:
            raise ConfigurationError("the PostgreSQL URL names no database")
        return postgres_grant_statements(url.database, schema, role, password, statement_timeout_s, connection_limit,
                                         work_mem, temp_file_limit)

    def grant_scope_exists(self, cursor: Any, schema: str) -> bool:
        cursor.execute("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s", (schema,))
        return cursor.fetchone() is not None

    def definer_revokes(self, engine: sa.Engine, schema: str) -> list[str]:
        from baton.specialists.sql.grants import postgres_definer_revokes

        return postgres_definer_revokes(engine, schema)

    # --- safety (safety/) ----------------------------------------------------------------------
    # pg_catalog relations that hold secrets or other sessions' activity: subconninfo,
    # primary_conninfo (pg_settings), other sessions' SQL, sampled values of every column
    # (pg_statistic, past column privileges). An unqualified name resolves in pg_catalog first.
    _SECRET_CATALOGS: ClassVar[frozenset[str]] = frozenset({
        "pg_authid", "pg_shadow", "pg_user_mapping", "pg_user_mappings", "pg_subscription", "pg_stat_activity",
        "pg_stat_replication", "pg_stat_wal_receiver", "pg_stat_ssl", "pg_stat_gssapi",
        "pg_hba_file_rules", "pg_ident_file_mappings", "pg_file_settings", "pg_settings", "pg_db_role_setting",
        "pg_largeobject", "pg_statistic", "pg_statistic_ext_data", "pg_locks", "pg_prepared_xacts",
        "pg_replication_slots", "pg_replication_origin_status", "pg_backend_memory_contexts", "pg_shmem_allocations",
        "pg_config", "pg_stat_progress_analyze", "pg_stat_progress_basebackup", "pg_stat_progress_cluster",
        "pg_stat_progress_copy", "pg_stat_progress_create_index", "pg_stat_progress_vacuum",
    })
    safety = SafetyRules(
        parser="baton.specialists.sql.safety.postgres:PARSER",  # pglast: libpg_query, the server's grammar
        catalog_reading="postgres",  # safety/data/postgres.json, from pg_proc and pg_class
        # run a query given as text, or read a relation named in one, at this argument (safety/embedded.py)
        query_arguments={"ts_stat": 0, "ts_rewrite": 1, "query_to_xml": 0, "query_to_xmlschema": 0,
                         "query_to_xml_and_xmlschema": 0},
        relation_arguments={"table_to_xml": 0, "table_to_xmlschema": 0, "table_to_xml_and_xmlschema": 0},
        sql_free_arities={"ts_rewrite": 2},  # ts_rewrite(tsquery, tsquery, tsquery) rewrites with queries, not SQL
        # every session's pid and user (for any role, as pg_stat_activity), the server's files and address
        server_functions={
            **{f"pg_stat_get_backend_{n}": ("sensitive_table", "lists every session of the server, as pg_stat_activity does")
               for n in ("idset", "pid", "userid", "dbid")},
            **{n: ("server_path", "names directories or addresses of the database server")
               for n in ("pg_tablespace_location", "pg_relation_filepath", "inet_server_addr", "inet_server_port")},
        },
        # any view's or function's text from an OID, no privilege on the object needed (safety/metadata.py)
        describes_named_object=frozenset({
            "pg_get_viewdef", "pg_get_functiondef", "pg_get_function_arguments", "pg_get_function_result",
            "pg_get_function_identity_arguments", "pg_get_function_sqlbody", "pg_get_triggerdef", "pg_get_ruledef",
            "pg_get_indexdef", "pg_get_constraintdef", "pg_get_expr", "pg_get_partkeydef", "pg_get_statisticsobjdef",
            "pg_get_statisticsobjdef_columns", "pg_get_statisticsobjdef_expressions", "pg_get_serial_sequence",
            "pg_describe_object", "pg_identify_object", "pg_identify_object_as_address", "obj_description",
            "col_description", "pg_get_partition_constraintdef", "pg_relation_filenode",
        }),
        secret_relations={"pg_catalog": _SECRET_CATALOGS,
                          "information_schema": frozenset({"user_mapping_options", "user_mappings"})},
        unqualified_secrets=_SECRET_CATALOGS,
        reserved_cte_names=_SECRET_CATALOGS,
        catalog_schema="pg_catalog",  # searched before the pinned search path; names as pglast decoded them
        # names, not definitions: pg_views, pg_matviews and pg_indexes carry every schema's SQL
        introspection={"information_schema": INFORMATION_SCHEMA_NAMES, "pg_catalog": frozenset({"pg_tables"})},
        definer_call="baton.specialists.sql.safety.definer:postgres_definer_call",
        identifier_escape="u&",  # U&"..." can spell any name in escapes
    )


def _may_set_temp_file_limit(raw: Any, cursor: Any) -> bool:
    """``temp_file_limit`` is a superuser setting: only a superuser or a role granted ``SET``
    on it (PostgreSQL 15+) may change it. Asked once per pooled connection."""
    key = "baton_may_set_temp_file_limit"
    if key not in raw.info:
        if raw.dbapi_connection.info.server_version >= 150000:
            cursor.execute("SELECT has_parameter_privilege('temp_file_limit', 'SET')")
        else:
            cursor.execute("SELECT current_setting('is_superuser') = 'on'")
        raw.info[key] = bool(cursor.fetchone()[0])
    return raw.info[key]


def _describe(driver: Any, sql: str) -> list[tuple[str, int]]:
    """Column names and type OIDs of ``sql``, prepared (not run) as the unnamed statement."""
    from psycopg import pq

    encoding = driver.info.encoding
    prepared = driver.pgconn.prepare(b"", sql.encode(encoding))
    if prepared.status != pq.ExecStatus.COMMAND_OK:
        return []
    shape = driver.pgconn.describe_prepared(b"")
    return [(shape.fname(i).decode(encoding), shape.ftype(i)) for i in range(shape.nfields)]


ENGINE = PostgresEngine()
