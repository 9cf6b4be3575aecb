"""The parser-side SQL safety check: only a single read-only query may reach a database.

``check.py`` holds the decision and explains it; the pieces:

- ``lexical.py``: MySQL/SQLite text whose tokenisation could differ is refused;
- ``postgres.py``, ``duckdb_reader.py``: the engines' own parsers, the authority;
- ``tree.py``: sqlglot's reading and rules (second opinion; the tree for pre-validation);
- ``functions.py`` + ``data/*.json``: which functions may be called, from the engines' catalogs;
- ``relations.py``: which relations may be read (secrets never; a workspace's schemas);
- ``verdict.py``: ``SafetyVerdict`` and ``UnsafeQueryError``;
- ``engine_code.py``: what differs between engines is the engine's (``Engine.safety``, a
  ``SafetyRules`` of tables: ``engines/safety_rules.py``); the code it names here (its parser,
  its definer-call finder) is loaded from there;
- ``work.py``: a count of the check's work, which tests show grows linearly.
"""

from baton.specialists.sql.safety.check import MAX_STATEMENT_LENGTH, assert_safe, check_safety
from baton.specialists.sql.safety.functions import denied_function_reason
from baton.specialists.sql.safety.relations import Relation, RelationPolicy
from baton.specialists.sql.safety.verdict import SafetyVerdict, UnsafeQueryError

__all__ = [
    "MAX_STATEMENT_LENGTH", "Relation", "RelationPolicy", "SafetyVerdict", "UnsafeQueryError", "assert_safe", "check_safety",
    "denied_function_reason",
]
