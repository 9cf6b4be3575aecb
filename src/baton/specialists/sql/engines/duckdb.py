"""DuckDB: a database file opened read-only inside this process.

``read_only=True``, ``enable_external_access=false`` (no file or network reads such as
``read_csv('/etc/passwd')``; measured: read-only alone allows them), a spill folder of Baton's
own with a size limit (``limits.py``) and ``lock_configuration=true``. DuckDB has no statement
timeout, so a timer interrupts the connection from another thread at the deadline. A read-only
DuckDB still creates temporary tables (which shadow real ones for the connection's next user),
variables and prepared statements, so DuckDB's own parser must see exactly one SELECT (or a
plain EXPLAIN of one) before anything runs. On check-in the ``random()`` seed is redrawn
(``session_reset.py``).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from baton.errors import ConfigurationError
from baton.specialists.sql.classify import ClassifiedError, ErrorClass, SQLExecutionError, classify_duckdb
from baton.specialists.sql.engines.base import Engine
from baton.specialists.sql.engines.metric_sql import MetricSQL
from baton.specialists.sql.engines.postgres import PostgresEngine
from baton.specialists.sql.engines.safety_rules import INFORMATION_SCHEMA_NAMES, SafetyRules
from baton.specialists.sql.explain import FullScan, duckdb_full_scans
from baton.specialists.sql.introspection import duckdb_row_estimates, duckdb_schema
from baton.specialists.sql.limits import duckdb_config, duckdb_temp_directory, release_duckdb_temp_directory
from baton.specialists.sql.session_reset import install_session_reset, reset_duckdb_session

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.schema import SchemaInfo

_EXPLAIN = re.compile(r"\s*EXPLAIN\s*(?:\(\s*FORMAT\s+\w+\s*\))?\s*(.*)", re.IGNORECASE | re.DOTALL)


class DuckDBEngine(Engine):
    name = "duckdb"
    title = "DuckDB"
    backends = ("duckdb",)
    in_process = True

    def create_engine(self, conn: SQLConnection) -> sa.Engine:
        url, opts = conn.url, conn.options
        if not url.database or url.database == ":memory:":
            raise ConfigurationError("DuckDB connections need a database file; DataFrames go through DataFrameAgent")
        if conn._duckdb_temp is None:
            conn._duckdb_temp = duckdb_temp_directory(url.database)
        # no file/network reads, no Python-variable replacement scans, and no SET to undo either
        config = {"enable_external_access": False, "python_enable_replacements": False, "lock_configuration": True,
                  **duckdb_config(opts, conn._duckdb_temp)}  # memory, threads, where and how much it spills (limits.py)
        engine = sa.create_engine(url, connect_args={"read_only": True, "config": config}, pool_size=opts.pool_size,
                                  max_overflow=0)
        install_session_reset(engine, reset_duckdb_session)
        return engine

    def close(self, conn: SQLConnection) -> None:
        if conn._duckdb_temp is not None:
            release_duckdb_temp_directory(conn._duckdb_temp)
            conn._duckdb_temp = None

    def default_schema(self, conn: SQLConnection) -> str | None:
        return conn.options.schema or "main"

    def readable_schemas(self, conn: SQLConnection) -> set[str]:
        schemas = super().readable_schemas(conn)
        if conn.url.database:
            schemas.add(Path(conn.url.database).stem)  # DuckDB names a database file's catalog by its stem
        return schemas

    @contextlib.contextmanager
    def guard(self, conn: SQLConnection, raw: Any, cursor: Any, sql: str, timeout_s: float) -> Iterator[None]:
        _admit_one_select(raw.dbapi_connection, sql)
        timer = threading.Timer(timeout_s, raw.dbapi_connection.interrupt)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def classify(self, error: BaseException, message: str) -> ClassifiedError:
        return classify_duckdb(error, message)

    def explain_sql(self, sql: str) -> str:
        return f"EXPLAIN (FORMAT JSON) {sql}"

    def full_scans(self, columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
        return duckdb_full_scans(columns, rows)

    # --- metric SQL (semantic/) ---
    metric_sql = MetricSQL(
        week_start="STRFTIME(DATE_TRUNC('week', CAST(SUBSTR({c}, 1, 10) AS DATE)), '%Y-%m-%d')",
        iso_weekday="CAST(EXTRACT(isodow FROM {c}) AS INTEGER)",
        day_of_year="CAST(EXTRACT(doy FROM {c}) AS INTEGER)",
        day_series="UNNEST(GENERATE_SERIES(b.lo, b.hi, INTERVAL 1 DAY))",
        full_outer_join=True, typed_dates=True, timestamp_comparisons=True, percentile=True,
        approximate_percentile=True,  # APPROX_QUANTILE, as MetricFlow calls it
        date_trunc=True, spine_arithmetic=True, subdaily_spine=True,
    )

    # --- schema, prompts and literals (introspection.py, prevalidate.py, rowcap.py, ...) ---
    escape_strings = True
    pseudo_columns = frozenset({"rowid"})
    select_aliases_everywhere = True

    def reflect(self, connection: sa.Connection, conn: SQLConnection, names: list[str] | None = None) -> SchemaInfo:
        """DuckDB's own catalogue functions: its SQLAlchemy reflection is broken against DuckDB 2.x."""
        return duckdb_schema(connection, conn)

    def row_estimates(self, connection: sa.Connection, conn: SQLConnection, schema: SchemaInfo) -> dict[str, int | None]:
        return duckdb_row_estimates(connection, conn)

    # --- safety (safety/) ----------------------------------------------------------------------
    safety = SafetyRules(
        parser="baton.specialists.sql.safety.duckdb_reader:PARSER",  # DuckDB's own parser
        reads_file_paths=True,  # FROM 'data.csv' reads the file
        catalog_reading="duckdb",  # safety/data/duckdb.json, from duckdb_functions()
        query_arguments={"query": 0},
        relation_arguments={"query_table": 0},
        # min/max values of another schema's columns (storage_info), a table's columns (safety/metadata.py)
        describes_named_object=frozenset({
            "pragma_storage_info", "storage_info", "pragma_table_info", "table_info", "pragma_show", "show",
        }),
        # every schema's DDL, macro bodies, the database file's path
        describes_every_object=frozenset({
            "duckdb_tables", "duckdb_views", "duckdb_indexes", "duckdb_constraints", "duckdb_functions",
            "duckdb_sequences", "duckdb_dependencies", "duckdb_types", "pragma_metadata_info",
            "metadata_info", "duckdb_databases", "database_list", "duckdb_extensions", "pragma_database_size",
            "database_size",
        }),
        secret_relations={"main": frozenset({"duckdb_secrets", "duckdb_settings", "duckdb_logs", "duckdb_variables",
                                             "duckdb_databases", "pragma_database_list"}),  # the last two: file paths
                          "pg_catalog": frozenset({"pg_settings"})},
        # DuckDB answers PostgreSQL's catalog names too (its pg_catalog schema): a CTE takes none
        # of the ones that hold secrets on PostgreSQL
        reserved_cte_names=PostgresEngine.safety.reserved_cte_names,
        # unqualified names resolve in the default schema, then in the catalog views, without case
        catalog_schema="main",
        catalog_names_fold=True,
        # the catalog views span every schema: main, the workspace's default schema, holds them too
        catalog_view_schemas=frozenset({None, "main", "pg_catalog", "information_schema"}),
        catalog_views_allowed="information_schema.tables/columns, duckdb_columns",
        # names, not definitions: duckdb_tables/views/indexes/constraints and information_schema.views carry DDL
        introspection={"information_schema": INFORMATION_SCHEMA_NAMES,
                       "main": frozenset({"duckdb_columns", "duckdb_schemas"})},
    )


def _admit_one_select(driver: Any, sql: str) -> None:
    """DuckDB's own parser must see one SELECT, or a plain EXPLAIN of one (``explain.py``):
    a read-only DuckDB still runs CREATE TEMP, SET VARIABLE, PREPARE... on the connection."""
    import duckdb

    statements = driver.extract_statements(sql)
    if len(statements) == 1 and statements[0].type == duckdb.StatementType.EXPLAIN:
        inner = _EXPLAIN.fullmatch(statements[0].query)
        if inner and not inner.group(1).lstrip().upper().startswith("ANALYZE"):
            statements = driver.extract_statements(inner.group(1))
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(str(s.type).rsplit(".", 1)[-1] for s in statements) or "nothing"
        raise SQLExecutionError(ClassifiedError(
            ErrorClass.PERMISSION_DENIED, f"only a single SELECT may run on this connection; DuckDB parsed: {kinds}",
            code="NotASelect"))


ENGINE = DuckDBEngine()
