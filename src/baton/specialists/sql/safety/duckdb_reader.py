"""DuckDB's own parser as the authority: what DuckDB will run.

``json_serialize_sql`` returns DuckDB's parse tree of SELECT statements (and an error for
anything else, whose kind ``extract_statements`` then names). The parser runs on a private
in-memory connection per thread with external access off: it reads no data, and the text is
passed as a parameter, never spliced into SQL. DuckDB folds function names (quoted or not),
so ``"Read_CSV"('x')`` is ``read_csv``; replacement scans read any table name that looks like
a path (``FROM 'data.csv'``), so path-like names are recorded as such.

The reading records the statement count, every function (``FUNCTION`` nodes, table
functions included), every base table with its catalog and schema, CTE names, and the
constant strings passed to each call; string builders whose size the constants tell
(``sizes.py``) refuse the statement.
"""

from __future__ import annotations

import json
import threading

from baton.specialists.sql.safety.engine_code import EngineParser
from baton.specialists.sql.safety.reading import Reading
from baton.specialists.sql.safety.relations import Relation

_LOCAL = threading.local()
_QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})


class DuckDBParseError(Exception):
    """The text is not valid DuckDB SQL (DuckDB would refuse it too)."""


def _parser():
    connection = getattr(_LOCAL, "connection", None)
    if connection is None:
        import duckdb

        connection = duckdb.connect(config={"enable_external_access": False, "threads": 1, "lock_configuration": True})
        _LOCAL.connection = connection
    return connection


def read_duckdb(sql: str) -> Reading:
    """DuckDB's reading of ``sql``. Raises ``DuckDBParseError`` when it does not parse."""
    connection = _parser()
    tree = json.loads(connection.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    if tree.get("error"):
        return _not_a_select(connection, sql, tree)
    statements = [s.get("node", {}) for s in tree.get("statements", [])]
    reading = Reading("duckdb", statements=len(statements))
    for node in statements:
        if node.get("type") not in _QUERY_NODES:
            reading.refuse("not_a_query", f"DuckDB reads this as {node.get('type', 'nothing')}; only queries may run")
        _walk(node, reading)
    if found := reading.build.refusal():
        reading.refuse(*found)
    return reading


_SERIALIZE_EACH = ("SELECT json_serialize_sql(t) FROM (SELECT unnest(l) AS t, generate_subscripts(l, 1) AS i "
                   "FROM (SELECT ?::VARCHAR[] AS l)) ORDER BY i")


def duckdb_parse_failures(texts: list[str]) -> list[bool]:
    """For each text, whether ``read_duckdb`` raises on it; one query for them all (a query
    per text cost 4,000 strings a second)."""
    if not texts:
        return []
    try:
        rows = _parser().execute(_SERIALIZE_EACH, [texts]).fetchall()
    except Exception:  # a text the binding refuses to pass (one at a time, as read_duckdb would)
        return [_fails(text, None) for text in texts]
    return [_fails(text, row[0]) for text, row in zip(texts, rows, strict=True)]


def _fails(text: str, serialized: str | None) -> bool:
    try:
        if serialized is None:
            read_duckdb(text)
            return False
        tree = json.loads(serialized)
        if tree.get("error"):
            _not_a_select(_parser(), text, tree)  # raises as read_duckdb would
    except Exception:
        return True
    return False


# DuckDB's ``Engine.safety.parser`` (engines/duckdb.py): it reads many texts in one query
PARSER = EngineParser(read_duckdb, DuckDBParseError, duckdb_parse_failures)


def _not_a_select(connection, sql: str, tree: dict) -> Reading:
    import duckdb

    if tree.get("error_type") == "parser":
        raise DuckDBParseError(tree.get("error_message", "syntax error"))
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as error:
        raise DuckDBParseError(str(error).splitlines()[0]) from None
    reading = Reading("duckdb", statements=len(statements))
    kinds = [str(s.type).rsplit(".", 1)[-1] for s in statements] or ["nothing"]
    reading.refuse(_RULES.get(kinds[0], "side_effect_statement"),
                   f"DuckDB reads this as {', '.join(kinds)}; only queries may run")
    return reading


_RULES = {
    "INSERT": "write_statement", "UPDATE": "write_statement", "DELETE": "write_statement",
    "MERGE_INTO": "write_statement", "CREATE": "ddl", "DROP": "ddl", "ALTER": "ddl", "CREATE_FUNC": "ddl",
    "COPY": "copy", "COPY_DATABASE": "copy", "EXPORT": "copy", "SET": "set", "VARIABLE_SET": "set",
    "PRAGMA": "pragma", "ATTACH": "attach", "DETACH": "attach", "TRANSACTION": "transaction",
    "EXPLAIN": "not_a_query", "MULTI": "not_a_query", "SELECT": "not_a_query",
}


def _constant_text(argument: dict) -> str | None:
    literal = (argument.get("expression") or {}).get("literal") or {}
    return literal.get("text", "") if literal.get("kind") == "STRING" else None


def _constant(argument: dict) -> int | str | None:
    """An argument's constant for the size estimate (``sizes.py``): integer or string literal."""
    literal = (argument.get("expression") or {}).get("literal") or {}
    if literal.get("kind") == "INTEGER":
        text = str(literal.get("text", ""))
        return int(text) if text.lstrip("-").isdigit() else None
    return _constant_text(argument)


def _walk(root: dict, reading: Reading) -> None:
    stack: list[object] = [root]
    push, pop = stack.append, stack.pop
    while stack:
        node = pop()
        if type(node) is not dict:
            if type(node) is list:
                stack.extend(node)
            continue
        if node.get("class") == "FUNCTION" and not node.get("is_operator"):
            name = str(node.get("function_name", "")).lower()
            reading.functions.add(name)
            arguments = node.get("arguments") or []
            reading.calls.append((name, tuple(_constant_text(a) for a in arguments)))
            reading.build.add_call(name, [_constant(a) for a in arguments])
        elif node.get("type") == "BASE_TABLE":
            reading.relations.add(Relation(node.get("table_name", ""), node.get("schema_name") or None,
                                           node.get("catalog_name") or None))
        for key, value in node.items():
            if type(value) is dict:
                if key == "cte_map":
                    reading.ctes.update(entry.get("key", "") for entry in value.get("map", []))
                push(value)
            elif type(value) is list:
                push(value)
