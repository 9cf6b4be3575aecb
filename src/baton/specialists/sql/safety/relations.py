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

The rules here are the same for every engine; the tables (secret catalogs, the introspection
allowlist, where catalog names resolve, whether names fold) are each engine's
(``Engine.safety``, ``engines/safety_rules.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from baton.specialists.sql.safety.functions import catalog

if TYPE_CHECKING:
    from baton.specialists.sql.engines.safety_rules import SafetyRules


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


@cache
def _readings_relations(reading: str) -> frozenset[str]:
    return frozenset(catalog(reading)["catalog_relations"])


def _catalog_relations(rules: SafetyRules) -> frozenset[str]:
    return frozenset() if rules.catalog_reading is None else _readings_relations(rules.catalog_reading)


def resolve(relation: Relation, rules: SafetyRules, policy: RelationPolicy | None) -> tuple[str | None, str]:
    """``(schema, name)`` of the relation the engine will read (schema None: the workspace's
    default schema when the caller gave none)."""
    name, schema = relation.name, relation.schema
    if rules.folds_case:
        name, schema = name.lower(), schema.lower() if schema else None
    if schema is None:
        if rules.catalog_schema is not None:
            key = name.lower() if rules.catalog_names_fold else name
            if key in _catalog_relations(rules):
                return rules.catalog_schema, key
        return (policy.default_schema if policy else None), name
    return schema, name


def refusal(relation: Relation, rules: SafetyRules, policy: RelationPolicy | None) -> tuple[str, str] | None:
    """``(rule, reason)`` when reading ``relation`` is refused, else None."""
    schema, name = resolve(relation, rules, policy)
    folded_schema = schema.lower() if schema else None
    secrets = rules.secret_relations
    for secret_schema in {schema, folded_schema}:
        if secret_schema in secrets:
            names = secrets[secret_schema]
            if names is None or name.lower() in names:
                return "sensitive_table", f"{relation} holds secrets or other sessions' activity"
    if schema is None and name in rules.unqualified_secrets:
        return "sensitive_table", f"{relation} holds secrets or other sessions' activity"
    if policy is None:
        return None
    if relation.catalog is not None and relation.catalog not in policy.schemas:
        return "relation_not_allowed", f"{relation} is in another database than this workspace's"
    if folded_schema in rules.catalog_view_schemas and name.lower() in _catalog_relations(rules):
        # the engine's catalog views span every schema (its default schema holds them too: that
        # is no reason to allow them)
        key = folded_schema or rules.catalog_schema or ""
        if policy.introspection and name.lower() in rules.introspection.get(key, ()):
            return None
        return "relation_not_allowed", (f"{relation} describes objects of every schema, not only this workspace's "
                                        f"(allowed: {rules.catalog_views_allowed})")
    if schema is None or schema in policy.schemas or (rules.folds_case and folded_schema in policy.schemas):
        return None
    if policy.introspection and name.lower() in rules.introspection.get(folded_schema or "", ()):
        return None
    return "relation_not_allowed", (
        f"{relation} is outside this workspace (allowed: schema {', '.join(sorted(policy.schemas)) or 'none'} "
        "and the introspection views)")


def is_catalog_name(name: str, rules: SafetyRules) -> bool:
    """Whether an unqualified ``name`` would resolve to a catalog relation (a CTE may not
    take such a name: the reference would be ambiguous to any reader but the engine)."""
    return name.lower() in _catalog_relations(rules) or name in rules.reserved_cte_names
