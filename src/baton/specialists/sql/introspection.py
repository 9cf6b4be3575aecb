"""Read a database's catalogue into the shared ``SchemaInfo``: tables and views, columns
and types, primary and foreign keys, table and column comments (where the meaning of a terse
warehouse schema lives: PostgreSQL ``COMMENT ON``, MySQL/MariaDB ``COMMENT``, DuckDB
``COMMENT ON``; SQLite has none), and a row estimate per table from each engine's own
statistics (cheap: no table is counted when a statistic exists).

Row estimates: PostgreSQL ``pg_class.reltuples`` (``-1``/never analysed -> unknown),
MySQL/MariaDB ``information_schema.tables.table_rows``, DuckDB ``duckdb_tables()
.estimated_size``, SQLite ``sqlite_stat1`` when ``ANALYZE`` has run, else a count bounded at
ten million rows. Columns, keys and foreign keys come from SQLAlchemy's bulk reflection,
except on DuckDB, whose SQLAlchemy reflection is broken against DuckDB 2.x (it queries
``pg_catalog.pg_collation``), so its own catalogue functions are read instead. Each engine
names its way (``Engine.reflect``, ``schema_versions``, ``row_estimates``: ``engines/``); the
readers are here.

Sample rows are not part of the schema: ``sample_rows`` fetches them on demand, and the
prompt includes them only when the operator set ``include_sample_rows`` (a cell is text
anyone could have written, so it is a prompt-injection channel).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
import sqlglot
from sqlglot import exp

from baton.specialists.sql.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo

if TYPE_CHECKING:
    from baton.response import QueryResult
    from baton.specialists.sql.connection import SQLConnection

_SQLITE_COUNT_BOUND = 10_000_000
MAX_COMMENT = 2_000  # characters of a table or column comment kept (the prompt shows fewer)


def introspect(conn: SQLConnection, previous: SchemaInfo | None = None) -> SchemaInfo:
    """Read the catalogue (sync; ``SQLConnection.schema()`` runs it in a worker thread). With
    ``previous`` (a refresh) on an engine that versions its tables (``Engine.schema_versions``:
    PostgreSQL), only the tables whose catalogue rows changed since are read again; row
    estimates are always read anew (one query)."""
    engine = conn.kind
    with _trusted(conn) as connection:
        versions = engine.schema_versions(connection, conn)
        schema = engine.reflect(connection, conn) if versions is None else _reflect_changed(connection, conn, previous, versions)
        for name, estimate in engine.row_estimates(connection, conn, schema).items():
            table = schema.table(name)
            if table is not None:
                table.row_estimate = estimate
    return schema


def postgres_fingerprints(connection: sa.Connection, conn: SQLConnection) -> dict[str, str]:
    """Each PostgreSQL table's (and view's) version: the transaction ids that last wrote its
    catalogue rows — ``pg_class``, its columns, its constraints, its comments. An ``ALTER``,
    ``COMMENT ON`` or new key changes it; one query, however many tables."""
    rows = connection.exec_driver_sql(
        "SELECT c.relname, concat_ws(':', c.oid, c.xmin, "
        "(SELECT max(a.xmin::text) FROM pg_attribute a WHERE a.attrelid = c.oid), "
        "(SELECT string_agg(k.xmin::text, ',' ORDER BY k.oid) FROM pg_constraint k WHERE k.conrelid = c.oid), "
        "(SELECT string_agg(d.xmin::text, ',' ORDER BY d.objsubid) FROM pg_description d WHERE d.objoid = c.oid)) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = coalesce(%(schema)s, current_schema()) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
        {"schema": conn.options.schema},
    ).fetchall()
    return {str(name): str(version) for name, version in rows}


def _reflect_changed(connection: sa.Connection, conn: SQLConnection, previous: SchemaInfo | None,
                     versions: dict[str, str]) -> SchemaInfo:
    """Reflect every table, or on a refresh only those whose version changed."""
    known = previous.versions if previous is not None else {}
    changed = [name for name, version in versions.items() if known.get(name) != version]
    if previous is None or len(changed) == len(versions):
        schema = conn.kind.reflect(connection, conn)
    else:
        schema = SchemaInfo(dialect=conn.dialect)
        for name in versions:
            table = previous.table(name)
            if name not in changed and table is not None:
                schema.add(table)
        if changed:
            for table in conn.kind.reflect(connection, conn, changed).tables.values():
                schema.add(table)
    schema.versions = versions
    return schema


@contextlib.contextmanager
def _trusted(conn: SQLConnection) -> Iterator[sa.Connection]:
    """A connection for our own catalogue queries: the connection is read-only (SQLite
    ``mode=ro``, DuckDB ``read_only``); the per-statement SQLite authorizer, which would
    refuse reflection's PRAGMAs, is only installed around model-written statements."""
    with conn.engine.connect() as connection:
        yield connection
        connection.rollback()


def reflect_tables(connection: sa.Connection, conn: SQLConnection, names: list[str] | None = None) -> SchemaInfo:
    """SQLAlchemy's bulk reflection (``names``: only these tables) of the engine's
    ``reflection_schema``: how an engine's schema is read unless it says otherwise."""
    inspector = sa.inspect(connection)
    schema_name = conn.kind.reflection_schema(conn)
    kinds = sa.engine.ObjectKind.TABLE | sa.engine.ObjectKind.VIEW
    columns = inspector.get_multi_columns(schema=schema_name, kind=kinds, filter_names=names)
    keys = inspector.get_multi_pk_constraint(schema=schema_name, kind=sa.engine.ObjectKind.TABLE, filter_names=names)
    foreign = inspector.get_multi_foreign_keys(schema=schema_name, kind=sa.engine.ObjectKind.TABLE, filter_names=names)
    comments = _table_comments(inspector, schema_name, kinds, names)
    info = SchemaInfo(dialect=conn.dialect)
    for (owner, table), cols in columns.items():
        primary = keys.get((owner, table))
        pk = set(primary.get("constrained_columns") or [] if primary else [])
        table_info = TableInfo(
            name=table,
            schema=owner,
            columns=[
                ColumnInfo(c["name"], _type_name(c["type"]), bool(c.get("nullable", True)), c["name"] in pk,
                           comment_text(c.get("comment")))
                for c in cols
            ],
            foreign_keys=[
                ForeignKey(list(fk["constrained_columns"]), fk["referred_table"], list(fk["referred_columns"]))
                for fk in foreign.get((owner, table)) or []
            ],
            description=comments.get((owner, table), ""),
        )
        info.add(table_info)
    return info


def _table_comments(inspector: Any, schema_name: str | None, kinds: Any,
                    names: list[str] | None = None) -> dict[tuple[str | None, str], str]:
    """Each table's comment (PostgreSQL ``COMMENT ON``, MySQL/MariaDB ``COMMENT``); none on SQLite."""
    try:
        found = inspector.get_multi_table_comment(schema=schema_name, kind=kinds, filter_names=names)
    except NotImplementedError:  # SQLite keeps no comments
        return {}
    return {key: comment_text(value.get("text")) for key, value in found.items() if value and value.get("text")}


def comment_text(value: object) -> str:
    """A comment as Baton keeps it: text, at most ``MAX_COMMENT`` characters (a catalogue comment
    is anyone's text, up to a gigabyte on PostgreSQL). Fencing for prompts is ``prompts.py``'s."""
    return str(value)[:MAX_COMMENT] if value else ""


def _type_name(type_: Any) -> str:
    try:
        return str(type_)
    except Exception:  # some reflected types cannot compile without a dialect
        return type(type_).__name__.upper()


def duckdb_schema(connection: sa.Connection, conn: SQLConnection) -> SchemaInfo:
    """DuckDB's own catalogue functions (its SQLAlchemy reflection queries ``pg_catalog``)."""
    schema_name = conn.options.schema or "main"
    info = SchemaInfo(dialect=conn.dialect)
    columns = connection.exec_driver_sql(
        "SELECT table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns() "
        "WHERE schema_name = ? AND NOT internal ORDER BY table_name, column_index",
        (schema_name,),
    ).fetchall()
    comments: dict[str, str] = dict(connection.exec_driver_sql(
        "SELECT table_name, comment FROM duckdb_tables() WHERE schema_name = ? AND comment IS NOT NULL "
        "UNION ALL SELECT view_name, comment FROM duckdb_views() WHERE schema_name = ? AND NOT internal AND comment IS NOT NULL",
        (schema_name, schema_name),
    ).fetchall())
    constraints = connection.exec_driver_sql(
        "SELECT table_name, constraint_type, constraint_column_names, referenced_table, referenced_column_names "
        "FROM duckdb_constraints() WHERE schema_name = ? AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')",
        (schema_name,),
    ).fetchall()
    pks: dict[str, set[str]] = {}
    fks: dict[str, list[ForeignKey]] = {}
    for table, kind, cols, ref_table, ref_cols in constraints:
        if kind == "PRIMARY KEY":
            pks.setdefault(table, set()).update(cols)
        else:
            fks.setdefault(table, []).append(ForeignKey(list(cols), ref_table, list(ref_cols or [])))
    for table, column, data_type, nullable, comment in columns:
        existing = info.table(table)
        if existing is None:
            existing = TableInfo(name=table, schema=schema_name, foreign_keys=fks.get(table, []),
                                 description=comment_text(comments.get(table)))
            info.add(existing)
        existing.columns.append(ColumnInfo(column, data_type, bool(nullable), column in pks.get(table, set()),
                                           comment_text(comment)))
    return info


def postgres_row_estimates(connection: sa.Connection, conn: SQLConnection) -> dict[str, int | None]:
    """``pg_class.reltuples`` (``-1``: never analysed, unknown)."""
    rows = connection.exec_driver_sql(
        "SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = coalesce(%(schema)s, current_schema()) AND c.relkind IN ('r', 'p', 'm')",
        {"schema": conn.options.schema},
    ).fetchall()
    return {name: (int(n) if n is not None and n >= 0 else None) for name, n in rows}


def mysql_row_estimates(connection: sa.Connection, conn: SQLConnection) -> dict[str, int | None]:
    """``information_schema.tables.table_rows`` of the connection's database."""
    rows = connection.exec_driver_sql(
        "SELECT table_name, table_rows FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'"
    ).fetchall()
    return {name: (int(n) if n is not None else None) for name, n in rows}


def duckdb_row_estimates(connection: sa.Connection, conn: SQLConnection) -> dict[str, int | None]:
    """``duckdb_tables().estimated_size``."""
    rows = connection.exec_driver_sql(
        "SELECT table_name, estimated_size FROM duckdb_tables() WHERE schema_name = ?", (conn.options.schema or "main",)
    ).fetchall()
    return {name: int(n) if n is not None else None for name, n in rows}


def sqlite_row_counts(connection: sa.Connection, schema: SchemaInfo) -> dict[str, int | None]:
    """``sqlite_stat1`` when ``ANALYZE`` has run, else a count bounded at ten million rows."""
    stats: dict[str, int | None] = {}
    has_stat = connection.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").first()
    if has_stat:
        for table, stat in connection.exec_driver_sql("SELECT tbl, stat FROM sqlite_stat1"):
            with contextlib.suppress(ValueError, IndexError):
                stats[table] = int(str(stat).split()[0])
    views = {row[0].lower() for row in connection.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'view'")}
    for table in schema.tables.values():
        if table.name in stats or table.name.lower() in views:
            continue
        quoted = exp.to_identifier(table.name, quoted=True).sql("sqlite")
        count = connection.exec_driver_sql(f"SELECT COUNT(*) FROM (SELECT 1 FROM {quoted} LIMIT {_SQLITE_COUNT_BOUND})").scalar_one()
        stats[table.name] = int(count)
    return stats


async def sample_rows(conn: SQLConnection, table: str, limit: int | None = None) -> QueryResult:
    """A few rows of ``table`` through the guarded executor (for prompts, only when the
    operator enabled ``include_sample_rows``)."""
    n = limit or conn.options.sample_row_count
    sql = exp.select("*").from_(exp.to_table(table, dialect=conn.dialect)).limit(n).sql(conn.dialect)
    sqlglot.parse_one(sql, read=conn.dialect)  # a table name that does not round-trip fails here
    return await conn.execute_readonly(sql, row_cap=n)
