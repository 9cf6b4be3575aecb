"""Calls to definer routines, found as the server resolves the names (rule ``definer_routine``).

A routine declared ``SECURITY DEFINER`` (``SQL SECURITY DEFINER`` on MariaDB/MySQL) runs with
its owner's rights and its body is not analysed: a call to one is refused unless the workspace
allowed it by name. Which routines those are is read from the catalog at connect
(``routines.py``) and travels in ``RelationPolicy.definer_routines`` as ``(schema, name)`` as
the catalog spells them; this module finds the calls in a statement.

PostgreSQL (pglast, the server's parser: quoted names keep their case, unquoted ones fold,
``U&"..."`` decoded)
    ``s.f(...)`` is ``(s, f)``; an unqualified ``f(...)`` resolves in ``pg_catalog`` and then
    the pinned search path (the policy's ``default_schema``; any schema when there is none).
    ``t.f`` and ``(x).f`` may call ``f(t)`` by functional notation, so those names count as
    unqualified calls. SQL passed as text (``query_to_xml('SELECT exec_sql(...)', ...)``) is
    read too: ``check.py`` runs this rule on every text it checks, embedded ones included.
MariaDB/MySQL (sqlglot's tokens: ``lexical.py`` has already refused any text whose
tokenisation could differ from the server's)
    A name followed by ``(``, qualified by ``db.`` or not (then the connection's database);
    routine and database names are compared without case (refusing a little more is the safe
    side where ``lower_case_table_names`` differs). A built-in function of the same name wins
    over a stored one when unqualified; it is refused anyway.

Each engine's ``Engine.safety.definer_call`` is one of the finders below (``postgres_definer_call``,
``mysql_definer_call``); an engine without definer routines has none.

Not seen, on purpose (the catalog reading in ``baton db check`` reports the routines, and
``baton db grant`` prints the REVOKEs): a definer routine called from a view's body, an
operator or a cast implemented by one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from baton.specialists.sql.engines import engine_named
from baton.specialists.sql.safety.engine_code import definer_finder

if TYPE_CHECKING:
    from baton.specialists.sql.engines.safety_rules import SafetyRules


def definer_refusal(sql: str, dialect: str, refused: frozenset[tuple[str, str]],
                    default_schema: str | None) -> tuple[str, str] | None:
    """``("definer_routine", reason)`` when ``sql`` calls a routine in ``refused``, else None."""
    return definer_call_refusal(sql, engine_named(dialect).safety, refused, default_schema)


def definer_call_refusal(sql: str, rules: SafetyRules, refused: frozenset[tuple[str, str]],
                         default_schema: str | None) -> tuple[str, str] | None:
    """``definer_refusal`` for an engine's rules (``Engine.safety.definer_call``: how its
    server resolves a call; engines without definer routines have none)."""
    if not refused or (finder := definer_finder(rules)) is None:
        return None
    lowered = sql.lower()
    escape = rules.identifier_escape
    if not any(name.lower() in lowered for _, name in refused) and not (escape is not None and escape in lowered):
        return None  # no identifier can spell a refused name: only U&"..." escapes change an identifier's letters
    found = finder(sql, refused, default_schema)
    if found is None:
        return None
    schema, name = found
    return ("definer_routine", f"{schema}.{name}() is a SECURITY DEFINER routine: its body runs with its owner's rights "
            "and is not checked; the workspace may allow it by name (allow_functions / --allow-function)")


def _postgres_match(schema: str | None, name: str, refused: frozenset[tuple[str, str]],
                    default_schema: str | None) -> tuple[str, str] | None:
    if schema is not None:
        return (schema, name) if (schema, name) in refused else None
    for key in refused:
        if key[1] == name and (default_schema is None or key[0] in ("pg_catalog", default_schema)):
            return key
    return None


def postgres_definer_call(sql: str, refused: frozenset[tuple[str, str]], default_schema: str | None) -> tuple[str, str] | None:
    from pglast import parser

    try:
        tree = json.loads(parser.parse_sql_json(sql))
    except Exception:
        return None  # the safety check has refused what the server cannot parse
    names = {name for _, name in refused}
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        called: list[tuple[str | None, str]] = []
        if "funcname" in node:
            parts = _strings(node["funcname"])
            if parts:
                called.append((parts[-2] if len(parts) > 1 else None, parts[-1]))
        if isinstance(node.get("fields"), list):  # ColumnRef: t.f may be f(t)
            called += [(None, part) for part in _strings(node["fields"])[1:]]
        if isinstance(node.get("indirection"), list):  # (x).f may be f(x)
            called += [(None, part) for part in _strings(node["indirection"])]
        for schema, name in called:
            if name in names and (key := _postgres_match(schema, name, refused, default_schema)):
                return key
        stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return None


def _strings(items: Any) -> list[str]:
    if not isinstance(items, list):
        return []
    return [i["String"]["sval"] for i in items if isinstance(i, dict) and "String" in i]


def mysql_definer_call(sql: str, refused: frozenset[tuple[str, str]], default_schema: str | None) -> tuple[str, str] | None:
    from sqlglot.dialects.mysql import MySQL
    from sqlglot.tokens import TokenType

    try:
        tokens = MySQL().tokenize(sql)
    except Exception:
        return None  # the safety check has refused what it cannot tokenise
    by_name: dict[str, list[tuple[str, str]]] = {}
    for key in refused:
        by_name.setdefault(key[1].lower(), []).append(key)
    strings = {TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.HEX_STRING, TokenType.BIT_STRING}
    for i, token in enumerate(tokens[:-1]):
        if token.token_type in strings or tokens[i + 1].token_type is not TokenType.L_PAREN:
            continue
        keys = by_name.get(token.text.lower())
        if not keys:
            continue
        qualified = i >= 2 and tokens[i - 1].token_type is TokenType.DOT
        schema = tokens[i - 2].text if qualified else default_schema
        for key in keys:
            if schema is None or key[0].lower() == schema.lower():
                return key
    return None


__all__ = ["definer_call_refusal", "definer_refusal", "mysql_definer_call", "postgres_definer_call"]
