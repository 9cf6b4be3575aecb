"""What the SQL safety check (``baton.specialists.sql.safety``) knows of one engine: ``Engine.safety``.

The check's logic is the same for every engine; what differs — the parser that is the
authority, the lexical rules where there is none, which catalogs hold secrets, which functions
describe other schemas or run SQL given as text, how a call to a definer routine resolves — is
declared here, per engine, as one frozen value of tables, so that the check never compares a
dialect name. One value rather than a hook per rule because the check runs on every query:
``check_safety`` resolves the engine once (a dict look-up) and every rule then reads a
precomputed frozenset or dict, never building one per call. The defaults are what an engine
without the feature has: no parser of its own (sqlglot alone reads the text), no secret
catalog, no function that takes SQL as text.

This module imports nothing of Baton's: the safety check reads it, never the other way round.
Code the check runs for one engine only (PostgreSQL's parser, how MySQL resolves a routine's
name) stays in ``safety/`` and is named here as ``"module:attribute"``, which the check loads on
first use (``safety/engine_code.py``); the large catalog readings (``safety/data/<name>.json``)
are named the same way, by file, and loaded on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# information_schema views that show names, not definitions (the SQL standard's; every engine
# that has the schema shows these): the introspection allowlist's common part
INFORMATION_SCHEMA_NAMES = frozenset({"tables", "columns", "schemata", "table_constraints", "key_column_usage",
                                      "referential_constraints", "constraint_column_usage", "statistics"})


@dataclass(frozen=True, eq=False, slots=True)
class LexicalRules:
    """How the engine tokenises text, for engines with no parser to ask (``safety/lexical.py``)."""

    # opening character -> (closing character, whether a backslash escapes the next character)
    quotes: Mapping[str, tuple[str, bool]]
    hash_comments: bool = False  # ``#`` starts a line comment (MySQL)
    # ``--`` starts a comment only before an ASCII space or control character (MySQL: before
    # anything else it is two minus signs, which sqlglot reads differently before a Unicode space)
    spaced_dash_comments: bool = False
    executable_comments: tuple[str, ...] = ()  # comment openers whose text the engine runs (``/*!``)
    backslash_outside_strings: bool = False  # a backslash outside a literal is a hazard (MySQL)


@dataclass(frozen=True, eq=False, slots=True)
class SafetyRules:
    """One engine's tables for the safety check (each field says which module reads it)."""

    # --- how the text is read (safety/check.py) ---
    # the engine's own parser, the authority, as ``"module:attribute"`` naming a
    # ``safety.engine_code.EngineParser``; None: sqlglot reads the text (after ``lexical``)
    parser: str | None = None
    lexical: LexicalRules | None = None  # for engines with no parser to ask
    # a table name that looks like a path (``FROM 'data.csv'``) is a file the engine reads
    reads_file_paths: bool = False

    # --- functions (safety/functions.py) ---
    catalog_reading: str | None = None  # ``safety/data/<name>.json``: the engine's own catalog reading
    denied_functions: Mapping[str, str] = field(default_factory=dict)  # refused here only -> why
    # names the deny list refuses that are ordinary reads here
    ordinary_functions: frozenset[str] = frozenset()

    # --- SQL given to a function as text (safety/embedded.py) ---
    query_arguments: Mapping[str, int] = field(default_factory=dict)  # function -> position of its query text
    relation_arguments: Mapping[str, int] = field(default_factory=dict)  # function -> position of a relation name
    # function -> the argument count of an overload that takes no SQL
    sql_free_arities: Mapping[str, int] = field(default_factory=dict)

    # --- catalog functions (safety/metadata.py) ---
    # refused whatever the policy: they describe the server, not the data -> (rule, what they do)
    server_functions: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    describes_named_object: frozenset[str] = frozenset()  # describe the object their first argument names
    describes_every_object: frozenset[str] = frozenset()  # describe every schema's objects

    # --- relations (safety/relations.py) ---
    folds_case: bool = False  # names compare without case (the parser does not fold them)
    # schema -> names that hold secrets or other sessions' activity (None: the whole schema;
    # schema None: an unqualified name)
    secret_relations: Mapping[str | None, frozenset[str] | None] = field(default_factory=dict)
    unqualified_secrets: frozenset[str] = frozenset()  # secret even when an unqualified name resolves nowhere else
    reserved_cte_names: frozenset[str] = frozenset()  # names a CTE may not take beside the catalog relations
    # where an unqualified name of the reading's catalog relations resolves, and whether that
    # look-up ignores case
    catalog_schema: str | None = None
    catalog_names_fold: bool = False
    # schemas in which the catalog relations are views spanning every schema, and the allowed
    # ones as a refusal names them
    catalog_view_schemas: frozenset[str | None] = frozenset()
    catalog_views_allowed: str = ""
    introspection: Mapping[str, frozenset[str]] = field(default_factory=dict)  # schema -> names-only views

    # --- definer routines (safety/definer.py) ---
    # ``"module:function"`` finding the calls in a text to refused ``(schema, name)`` routines, as
    # the server resolves them; None: the engine has no definer routines
    definer_call: str | None = None
    identifier_escape: str | None = None  # lower-case text that can change an identifier's letters
