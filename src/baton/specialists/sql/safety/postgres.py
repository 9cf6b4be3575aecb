"""PostgreSQL's own parser as the authority: what the server will run, read by pglast.

pglast embeds libpg_query, the server's grammar and lexer, so identifiers come out exactly as
the server decodes them: ``U&"pg\\005fread\\005ffile"`` and ``UESCAPE`` are ``pg_read_file``,
unquoted names are folded, quoted ones kept, ``E''``/``U&''``/dollar-quoted strings decoded,
nested comments nested. sqlglot reads some of these differently (FACTS.md), which made the
check a bypass. The JSON form of the tree is read (about 5x faster than building pglast's
Python AST): node types appear as wrapper keys (``{"FuncCall": {...}}``) except for fields
of a fixed type, so the walk recognises nodes by their characteristic fields (``relname``,
``funcname``, ``ctename``) rather than by the wrapper.

What the reading records: statement count and kind; SELECT INTO, locking clauses and
data-modifying CTEs anywhere; every function called (``FuncCall``), plus names that may call
a function by functional notation (``t.f`` and ``(x).f`` mean ``f(t)`` to PostgreSQL);
operators qualified with a schema other than ``pg_catalog`` wherever the grammar takes one
(``OPERATOR(s.+)`` in an expression, ``= ANY (subquery)``, ``ORDER BY ... USING``: it runs a
function this check cannot see); string builders whose size the constants tell (``sizes.py``);
TABLESAMPLE methods other than the built-in ones; every
relation (``RangeVar``) and CTE name; and the decoded string constants passed to each call.

A cast to ``regclass``/``regproc`` only looks an OID up; the functions that would read a
relation named by one (``table_to_xml``, ``pgstattuple``...) are refused by name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from baton.specialists.sql.safety.engine_code import EngineParser
from baton.specialists.sql.safety.reading import Reading
from baton.specialists.sql.safety.relations import Relation

_QUERY_KINDS = frozenset({"SelectStmt"})
_SAMPLE_METHODS = frozenset({"bernoulli", "system", "system_rows", "system_time"})


class PostgresParseError(Exception):
    """The text is not valid PostgreSQL (the server would refuse it too)."""


def read_postgres(sql: str) -> Reading:
    """The server's reading of ``sql``. Raises ``PostgresParseError`` when it does not parse."""
    from pglast import parser

    try:
        tree = json.loads(parser.parse_sql_json(sql))
    except parser.ParseError as error:
        raise PostgresParseError(str(error)) from None
    statements = [s.get("stmt", {}) for s in tree.get("stmts", [])]
    reading = Reading("pglast", statements=len(statements))
    for statement in statements:
        kind = next(iter(statement), "nothing")
        if kind not in _QUERY_KINDS:
            reading.refuse(statement_rule(kind), f"PostgreSQL reads this as {_kind_label(kind)}; only queries may run")
        _walk(statement, reading)
    if found := reading.build.refusal():
        reading.refuse(*found)
    return reading


def postgres_parse_failures(texts: list[str]) -> Iterator[bool]:
    """For each text, whether PostgreSQL cannot parse it; lazily, as the check stops at the
    first text that parses (a string that is SQL: ``check._strings_refusal``)."""
    for text in texts:
        try:
            read_postgres(text)
        except Exception:
            yield True
        else:
            yield False


@cache
def postgres_grammar_keywords() -> frozenset[str]:
    """Names PostgreSQL's grammar gives a meaning of its own (its reserved and column-name
    keywords: ``xmlattributes(...)``, ``coalesce(...)``), which sqlglot may read as ordinary
    calls: no function by such a name can be called without quoting it."""
    from pglast import keywords

    return frozenset(keywords.RESERVED_KEYWORDS | keywords.COL_NAME_KEYWORDS | keywords.TYPE_FUNC_NAME_KEYWORDS)


# PostgreSQL's ``Engine.safety.parser`` (engines/postgres.py)
PARSER = EngineParser(read_postgres, PostgresParseError, postgres_parse_failures, postgres_grammar_keywords)

_RULES = {
    "InsertStmt": "write_statement", "UpdateStmt": "write_statement", "DeleteStmt": "write_statement",
    "MergeStmt": "write_statement", "TruncateStmt": "write_statement",
    "CommentStmt": "ddl", "DefineStmt": "ddl", "IndexStmt": "ddl", "ViewStmt": "ddl", "RuleStmt": "ddl",
    "CompositeTypeStmt": "ddl", "SecLabelStmt": "ddl",
    "GrantStmt": "privilege", "GrantRoleStmt": "privilege", "AlterDefaultPrivilegesStmt": "privilege",
    "CopyStmt": "copy", "VariableSetStmt": "set", "TransactionStmt": "transaction", "LockStmt": "locking_clause",
    "ExplainStmt": "not_a_query", "VariableShowStmt": "not_a_query",
}


def statement_rule(kind: str) -> str:
    """The verdict's rule for a statement PostgreSQL reads as ``kind`` (not a query)."""
    if kind in _RULES:
        return _RULES[kind]
    if kind.startswith(("Create", "Drop", "Alter", "Rename")):
        return "ddl"
    return "side_effect_statement"  # DO, CALL, VACUUM, NOTIFY, LISTEN, PREPARE, EXECUTE, LOAD...


def _walk(root: object, reading: Reading) -> None:
    stack: list[Any] = [root]  # pglast's JSON: only dicts and lists are ever pushed
    push, pop = stack.append, stack.pop
    while stack:
        node = pop()
        if type(node) is list:
            stack.extend(node)
            continue
        for key, value in node.items():
            handler = _HANDLERS.get(key)
            if handler is not None:
                handler(node, value, reading)
            if type(value) is dict or type(value) is list:
                push(value)


def _relation(node: dict, value: object, reading: Reading) -> None:
    reading.relations.add(Relation(str(value), node.get("schemaname"), node.get("catalogname")))


def _cte(node: dict, value: object, reading: Reading) -> None:
    reading.ctes.add(str(value))
    kind = next(iter(node.get("ctequery") or {}), "nothing")
    if kind not in _QUERY_KINDS:
        reading.refuse("data_modifying_cte", f"a CTE holds {_kind_label(kind)}, which writes")


def _into(node: dict, value: object, reading: Reading) -> None:
    if value:
        reading.refuse("select_into", "SELECT ... INTO writes a table")


def _locking(node: dict, value: object, reading: Reading) -> None:
    if value:
        reading.refuse("locking_clause", "a FOR UPDATE / FOR SHARE clause takes row locks")


def _column(node: dict, value: dict, reading: Reading) -> None:
    fields = _names(value.get("fields", []))
    if len(fields) >= 2:
        reading.notation.add(fields[-1].lower())  # t.f may call f(t)


def _indirection(node: dict, value: dict, reading: Reading) -> None:
    reading.notation.update(n.lower() for n in _names(value.get("indirection", [])))


def _sample(node: dict, value: dict, reading: Reading) -> None:
    method = _names(value.get("method", []))
    if len(method) != 1 or method[0].lower() not in _SAMPLE_METHODS:
        reading.refuse("dangerous_function", f"TABLESAMPLE {'.'.join(method)} runs a function this check cannot see")


def _call(node: dict, value: object, reading: Reading) -> None:
    names = _names(node.get("funcname", []))
    if not names:
        return
    name = names[-1].lower()
    arguments = node.get("args", []) or []
    reading.functions.add(name)
    reading.calls.append((name, tuple(_constant_text(a) for a in arguments)))
    reading.build.add_call(name, [_constant(a) for a in arguments])


def _operator(node: dict, expr: dict, reading: Reading) -> None:
    _qualified_operator(_names(expr.get("name", [])), reading)


def _operator_name(node: dict, value: list, reading: Reading) -> None:
    """``x OPERATOR(s.=) ANY (subquery)`` (``SubLink.operName``) and ``ORDER BY x USING
    OPERATOR(s.<)`` (``SortBy.useOp``, in a query, an aggregate or a window)."""
    _qualified_operator(_names(value), reading)


def _qualified_operator(names: list[str], reading: Reading) -> None:
    if len(names) > 1 and names[0] != "pg_catalog":
        reading.refuse("dangerous_function",
                       f"OPERATOR({'.'.join(names)}) runs a function from schema {names[0]}, which this check cannot see")


def _constant(argument: object) -> int | str | None:
    """A call argument's constant value for the size estimate (``sizes.py``): an integer
    literal (possibly cast), else its constant text, else None."""
    while isinstance(argument, dict) and len(argument) == 1 and "TypeCast" in argument:
        argument = argument["TypeCast"].get("arg")
    if isinstance(argument, dict) and "A_Const" in argument:
        body = argument["A_Const"]
        if "ival" in body:
            return int(body["ival"].get("ival", 0))
        if "fval" in body:
            text = str(body["fval"].get("fval", ""))
            return int(text) if text.isdigit() else None
    return _constant_text(argument)


def _constant_text(argument: object, depth: int = 0) -> str | None:
    """The string a call argument is, when it is a constant: a literal, possibly cast, named,
    collated or concatenated from constants with ``||``."""
    if depth > 32 or not isinstance(argument, dict) or len(argument) != 1:
        return None
    kind, body = next(iter(argument.items()))
    if kind == "A_Const":
        value = body.get("sval")
        return value.get("sval", "") if isinstance(value, dict) else None
    if kind in ("TypeCast", "NamedArgExpr", "CollateClause"):
        return _constant_text(body.get("arg"), depth + 1)
    if kind == "A_Expr" and _names(body.get("name", [])) == ["||"]:
        left, right = _constant_text(body.get("lexpr"), depth + 1), _constant_text(body.get("rexpr"), depth + 1)
        return left + right if left is not None and right is not None else None
    return None


_HANDLERS: dict[str, Callable[[dict, Any, Reading], None]] = {
    "relname": _relation, "funcname": _call, "ctename": _cte, "intoClause": _into, "lockingClause": _locking,
    "A_Expr": _operator, "ColumnRef": _column, "A_Indirection": _indirection, "RangeTableSample": _sample,
    "operName": _operator_name, "useOp": _operator_name,
}


def _names(items: list) -> list[str]:
    return [i["String"]["sval"] for i in items if isinstance(i, dict) and "String" in i]


def _kind_label(kind: str) -> str:
    """``VariableSetStmt`` -> ``VARIABLE SET``: the statement as a user would name it."""
    return " ".join(re.findall(r"[A-Z][a-z]*", kind.removesuffix("Stmt"))).upper() or kind
