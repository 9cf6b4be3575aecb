"""Catalog functions that describe objects outside the workspace, and settings that name paths.

A ``RelationPolicy`` keeps model SQL to the workspace's schemas, but relations are not the only
way to read about other schemas. Measured as the least-privilege role (issue 24): DuckDB's
``pragma_storage_info('other.t')`` returns each column's min/max *values*, ``duckdb_tables()``
every table's DDL, ``duckdb_databases()`` the database file's path; PostgreSQL's
``pg_get_viewdef``/``pg_get_functiondef`` return any view's or function's text (an OID is
enough, no privilege on the object needed); MariaDB's ``@@datadir``, ``@@log_error``,
``@@socket``... name the server's files. So, with a policy in force:

- functions that describe *one* object named by their first argument (``pragma_table_info``,
  ``pg_get_viewdef``, ``obj_description``...) are allowed only when that argument is a constant
  naming a relation the policy allows (``'rt.v'::regclass``, ``'sales'``); an OID, a subquery or
  a column could be anything, so they are refused;
- functions that describe *every* object (``duckdb_tables()``, ``duckdb_functions()``'s macro
  bodies...) are refused;
- whatever the policy, MySQL/MariaDB system variables that name paths (``@@datadir``) are
  refused, as ``current_setting`` of such a setting is (``functions.path_setting``), and
  PostgreSQL's tablespace and file paths, its address, and ``pg_stat_get_backend_*`` (pids and
  users of every session, for any role): they describe the server, not the data.

Names of other schemas' objects stay visible where the engine itself shows them
(``information_schema.tables``); their definitions, statistics and paths do not. Which
functions describe one object, every object or the server is each engine's
(``Engine.safety``: ``describes_named_object``, ``describes_every_object``, ``server_functions``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from baton.specialists.sql.safety.functions import path_setting
from baton.specialists.sql.safety.relations import Relation, RelationPolicy
from baton.specialists.sql.safety.relations import refusal as relation_refusal

if TYPE_CHECKING:
    from baton.specialists.sql.engines.safety_rules import SafetyRules

def variable_refusal(name: str) -> tuple[str, str] | None:
    """MySQL/MariaDB ``@@name`` (``@@global.name``): refused when it names server paths."""
    bare = name.strip().strip("`").rsplit(".", 1)[-1]
    if path_setting(bare):
        return "server_path", f"the system variable @@{bare} names files or directories of the database server"
    return None


def metadata_refusal(
    name: str, arguments: Sequence[str | None] | None, rules: SafetyRules, policy: RelationPolicy | None
) -> tuple[str, str] | None:
    """``(rule, reason)`` when the call ``name(arguments)`` describes objects outside ``policy``
    (``arguments``: each argument's constant text, None where not a constant)."""
    lowered = name.lower()
    if found := rules.server_functions.get(lowered):
        return found[0], f"{lowered}() {found[1]}"
    if policy is None:
        return None
    if lowered in rules.describes_every_object:
        return "relation_not_allowed", (f"{lowered}() describes objects of every schema, not only this "
                                        "workspace's; read information_schema instead")
    if lowered not in rules.describes_named_object:
        return None
    target = arguments[0] if arguments else None
    relation = object_name(target) if target is not None else None
    if relation is None:
        return "relation_not_allowed", (f"{lowered}() describes an object this check cannot identify; name an "
                                        "object of this workspace as a constant ('schema.name')")
    if found := relation_refusal(relation, rules, policy):
        return "relation_not_allowed", f"{lowered}() describes {relation}, which {found[1].split(' ', 1)[1]}"
    return None


_PART = re.compile(r'\s*(?:"((?:[^"]|"")*)"|([^."\s()]+))\s*')


def object_name(text: str) -> Relation | None:
    """The relation a constant such as ``'s.t'``, ``'"S".t'`` or ``'s.f(int)'`` names (None
    when it is not a plain dotted name). Unquoted parts fold to lower case, as the engines do."""
    text = text.split("(", 1)[0]
    parts: list[str] = []
    position = 0
    while True:
        match = _PART.match(text, position)
        if match is None:
            return None
        quoted, plain = match.groups()
        parts.append(quoted.replace('""', '"') if quoted is not None else plain.lower())
        position = match.end()
        if position == len(text):
            break
        if text[position] != ".":
            return None
        position += 1
    if not 1 <= len(parts) <= 3:
        return None
    padded: list[str | None] = [None] * (3 - len(parts)) + parts
    return Relation(parts[-1], padded[1], padded[0])
