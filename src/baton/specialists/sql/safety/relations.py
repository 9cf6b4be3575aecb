"""Which relations model-written SQL may read, decided on the name the engine resolves.

Two rules, both on the relation's resolved ``(schema, name)``:

1. Catalogs that hold secrets or other sessions' activity are refused on every engine,
   whatever the caller allows: PostgreSQL's ``pg_authid``, ``pg_shadow``, ``pg_user_mappings``,
   ``pg_subscription`` (``subconninfo``), ``pg_stat_activity`` (other sessions' SQL),
   ``pg_hba_file_rules``, ``pg_file_settings``, ``pg_settings`` (``primary_conninfo``),
   ``pg_statistic`` (sampled values of every column, past column privileges)...; MySQL's
   ``mysql.*``, ``performance_schema.*``, ``sys.*`` and ``information_schema.PROCESSLIST``;
   DuckDB's ``duckdb_secrets``/``duckdb_settings``.
2. With a ``RelationPolicy`` (the agent's path: ``SQLConnection`` builds one from its
   options), a relation must lie in one of the workspace's schemas or be one of a short
   allowlist of introspection views that show names, not definitions
   (``information_schema.tables``/``columns``..., PostgreSQL's ``pg_tables``, DuckDB's
   ``duckdb_columns``, SQLite's ``sqlite_schema``). Catalog views and functions that carry
   other schemas' definitions, statistics or paths are refused (``metadata.py``).

Resolution follows the engine. PostgreSQL searches ``pg_catalog`` before the search path, so
an unqualified name that is a ``pg_catalog`` relation *is* that relation (a workspace table
called ``pg_authid`` is unreachable unqualified); any other unqualified name lies in the
workspace schema, which ``SQLConnection`` pins as the whole search path. DuckDB resolves
unqualified names in the default schema, then in its catalog views. MySQL resolves them in
the connection's database. Names are compared as the engine decoded them (pglast and
DuckDB's parser fold unquoted identifiers); where an engine folds case (MySQL, SQLite), the
comparison does too. A CTE may not take the name of a catalog relation, so an unqualified
name that matches a CTE is the CTE or a workspace table, never a catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baton.specialists.sql.safety.functions import catalog

_PG_SECRET = frozenset({
    "pg_authid", "pg_shadow", "pg_user_mapping", "pg_user_mappings", "pg_subscription", "pg_stat_activity",
    "pg_stat_replication", "pg_stat_wal_receiver", "pg_stat_ssl", "pg_stat_gssapi",
    "pg_hba_file_rules", "pg_ident_file_mappings", "pg_file_settings", "pg_settings", "pg_db_role_setting",
    "pg_largeobject", "pg_statistic", "pg_statistic_ext_data", "pg_locks", "pg_prepared_xacts",
    "pg_replication_slots", "pg_replication_origin_status", "pg_backend_memory_contexts", "pg_shmem_allocations",
    "pg_config", "pg_stat_progress_analyze", "pg_stat_progress_basebackup", "pg_stat_progress_cluster",
    "pg_stat_progress_copy", "pg_stat_progress_create_index", "pg_stat_progress_vacuum",
})
_SECRET: dict[str, dict[str | None, frozenset[str] | None]] = {
    # schema -> names (None: the whole schema)
    "postgres": {"pg_catalog": _PG_SECRET,
                 "information_schema": frozenset({"user_mapping_options", "user_mappings"})},
    "mysql": {"mysql": None, "performance_schema": None, "sys": None,
              "information_schema": frozenset({"processlist", "innodb_trx", "innodb_locks", "innodb_lock_waits",
                                               "user_variables", "global_variables", "session_variables",
                                               "system_variables"})},
    "duckdb": {"main": frozenset({"duckdb_secrets", "duckdb_settings", "duckdb_logs", "duckdb_variables",
                                  "duckdb_databases", "pragma_database_list"}),  # the last two: file paths
               "pg_catalog": frozenset({"pg_settings"})},
    "sqlite": {None: frozenset({"pragma_database_list"}), "main": frozenset({"pragma_database_list"})},  # file paths
}

# Names, not definitions: PostgreSQL's pg_views/pg_matviews/pg_indexes carry the SQL of every
# schema's views and indexes (no privilege needed), DuckDB's duckdb_tables/duckdb_views/
# duckdb_indexes/duckdb_constraints every schema's DDL, information_schema.views every view's
# text on DuckDB and, on PostgreSQL and MySQL, every view's its reader may see (all of them for
# a privileged role).
_INFORMATION_SCHEMA = frozenset({"tables", "columns", "schemata", "table_constraints", "key_column_usage",
                                 "referential_constraints", "constraint_column_usage", "statistics"})
_INTROSPECTION: dict[str, dict[str, frozenset[str]]] = {
    "postgres": {"information_schema": _INFORMATION_SCHEMA, "pg_catalog": frozenset({"pg_tables"})},
    "mysql": {"information_schema": _INFORMATION_SCHEMA},
    "duckdb": {"information_schema": _INFORMATION_SCHEMA,
               "main": frozenset({"duckdb_columns", "duckdb_schemas"})},
    "sqlite": {"main": frozenset({"sqlite_schema", "sqlite_master"})},
}

_FOLDS_CASE = frozenset({"mysql", "sqlite"})


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation as a query names it: ``schema`` is None when unqualified."""

    name: str
    schema: str | None = None
    catalog: str | None = None

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.schema, self.name) if p)


@dataclass(frozen=True, slots=True)
class RelationPolicy:
    """The relations model SQL may read: the workspace's ``schemas`` plus, with
    ``introspection``, the short allowlist of catalog views. ``default_schema`` is where an
    unqualified name that is not a catalog relation resolves (the pinned search path)."""

    schemas: frozenset[str] = field(default_factory=frozenset)
    default_schema: str | None = None
    introspection: bool = True
    # (schema, name) of the definer routines a call to which is refused (safety/definer.py)
    definer_routines: frozenset[tuple[str, str]] = field(default_factory=frozenset)

    @classmethod
    def for_schema(cls, schema: str, *, introspection: bool = True) -> RelationPolicy:
        return cls(frozenset({schema}), schema, introspection)


def _catalog_relations(dialect: str) -> frozenset[str]:
    if dialect in ("postgres", "duckdb"):
        return frozenset(catalog(dialect)["catalog_relations"])
    return frozenset()


def resolve(relation: Relation, dialect: str, policy: RelationPolicy | None) -> tuple[str | None, str]:
    """``(schema, name)`` of the relation the engine will read (schema None: the workspace's
    default schema when the caller gave none)."""
    name, schema = relation.name, relation.schema
    if dialect in _FOLDS_CASE:
        name, schema = name.lower(), schema.lower() if schema else None
    if schema is None:
        if dialect == "postgres" and name in _catalog_relations("postgres"):
            return "pg_catalog", name
        if dialect == "duckdb" and name.lower() in _catalog_relations("duckdb"):
            return "main", name.lower()
        return (policy.default_schema if policy else None), name
    return schema, name


def refusal(relation: Relation, dialect: str, policy: RelationPolicy | None) -> tuple[str, str] | None:
    """``(rule, reason)`` when reading ``relation`` is refused, else None."""
    schema, name = resolve(relation, dialect, policy)
    folded_schema = schema.lower() if schema else None
    secrets = _SECRET.get(dialect, {})
    for secret_schema in {schema, folded_schema}:
        if secret_schema in secrets:
            names = secrets[secret_schema]
            if names is None or name.lower() in names:
                return "sensitive_table", f"{relation} holds secrets or other sessions' activity"
    if schema is None and dialect == "postgres" and name in _PG_SECRET:
        return "sensitive_table", f"{relation} holds secrets or other sessions' activity"
    if policy is None:
        return None
    if relation.catalog is not None and relation.catalog not in policy.schemas:
        return "relation_not_allowed", f"{relation} is in another database than this workspace's"
    if dialect == "duckdb" and _duckdb_catalog_view(folded_schema, name.lower()):
        if policy.introspection and name.lower() in _INTROSPECTION["duckdb"].get(folded_schema or "main", ()):
            return None
        return "relation_not_allowed", (f"{relation} describes objects of every schema, not only this workspace's "
                                        "(allowed: information_schema.tables/columns, duckdb_columns)")
    if schema is None or schema in policy.schemas or (dialect in _FOLDS_CASE and folded_schema in policy.schemas):
        return None
    if policy.introspection and name.lower() in _INTROSPECTION.get(dialect, {}).get(folded_schema or "", ()):
        return None
    return "relation_not_allowed", (
        f"{relation} is outside this workspace (allowed: schema {', '.join(sorted(policy.schemas)) or 'none'} "
        "and the introspection views)")


def _duckdb_catalog_view(schema: str | None, name: str) -> bool:
    """Whether DuckDB reads ``schema.name`` as one of its own catalog views, which span every
    schema (``main`` holds them too: the workspace's default schema is no reason to allow them)."""
    return name in _catalog_relations("duckdb") and schema in (None, "main", "pg_catalog", "information_schema")


def is_catalog_name(name: str, dialect: str) -> bool:
    """Whether an unqualified ``name`` would resolve to a catalog relation (a CTE may not
    take such a name: the reference would be ambiguous to any reader but the engine)."""
    return name.lower() in _catalog_relations(dialect) or name in _PG_SECRET
