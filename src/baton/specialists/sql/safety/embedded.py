"""SQL given to a function as text: checked like any query when it is a constant.

PostgreSQL's ``ts_stat``, ``ts_rewrite`` and ``query_to_xml`` run a query given as text, and
``table_to_xml`` reads a relation named in a string (DuckDB: ``query``, ``query_table``). Refused
by name, they cost real reads (the regression suite's ``ts_rewrite`` examples); allowed blindly,
``ts_stat($$SELECT pg_read_file(...)$$)`` read a server file. With the engine's own parser the
text can be read exactly as the function will read it, so: a constant text is checked like any
query, with the same functions, relations and policy (a relation name as ``SELECT * FROM name``);
text built at run time (``chr(83) || ...``, a column, a subquery) cannot be known before the
query runs and is refused. Nesting is bounded (``MAX_DEPTH``). Functions that read a whole
schema or database (``schema_to_xml``, ``database_to_xml``) or a cursor stay refused by name.
Which functions take SQL or a relation name as text, and at which argument, is each engine's
(``Engine.safety``: ``query_arguments``, ``relation_arguments``, ``sql_free_arities``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from baton.specialists.sql.safety.verdict import SafetyVerdict, refuse

if TYPE_CHECKING:
    from baton.specialists.sql.engines.safety_rules import SafetyRules

MAX_DEPTH = 3


def takes_sql_text(name: str, rules: SafetyRules) -> bool:
    return name in rules.query_arguments or name in rules.relation_arguments


def judge_embedded(
    name: str, arguments: Sequence[str | None], rules: SafetyRules, depth: int, check: Callable[[str, int], SafetyVerdict]
) -> SafetyVerdict:
    """The verdict on a call to ``name`` (which ``takes_sql_text``): safe when its text is a
    constant that passes ``check``, a refusal otherwise."""
    arity = rules.sql_free_arities.get(name)
    if arity is not None and len(arguments) != arity:
        return SafetyVerdict(True, f"this form of {name}() runs no SQL")
    queries = rules.query_arguments
    if name in queries:
        query = _argument(arguments, queries[name])
    else:
        relation = _argument(arguments, rules.relation_arguments[name])
        query = None if relation is None else f"SELECT * FROM {relation}"
    if query is None:
        return refuse("sql_in_string", f"{name}() runs SQL built at run time, which cannot be checked before it runs")
    if depth >= MAX_DEPTH:
        return refuse("sql_in_string", f"SQL text nested {depth} strings deep cannot be checked")
    inner = check(query, depth + 1)
    if not inner.safe:
        return refuse(inner.rule, f"the SQL given to {name}(): {inner.reason}")
    return SafetyVerdict(True, f"the SQL given to {name}() is a read-only query")


def _argument(arguments: Sequence[str | None], position: int) -> str | None:
    return arguments[position] if position < len(arguments) else None
