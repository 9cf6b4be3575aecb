"""Ground truth for "is this DuckDB statement a read?", judged by DuckDB's own parser.

The DuckDB counterpart of ``sql_ground_truth`` (same definition of a read, same ``Truth``),
for the corpora ``bench/sql_false_refusals.py`` runs as DuckDB SQL. It never calls the
safety check under test. DuckDB parses: ``extract_statements`` gives the statement count and
type, ``json_serialize_sql`` the tree of a SELECT (it serialises nothing else).

A read is one SELECT statement whose tree calls no side-effecting function
(``sql_side_effects.DUCKDB_SIDE_EFFECTS``, against ``duckdb_functions()``: sequences, the
PRNG seed, sleeping, logging, checkpoints, instance state, files, SQL run from text) and
names no file as a table: DuckDB reads ``FROM 'data.csv'`` or ``FROM "s3://..."`` through a
replacement scan, so a table name that looks like a path or a file counts as a file read.
A SELECT DuckDB parses but will not serialise is left out of the corpus (``classify``
returns None), as is anything that does not parse.

DESCRIBE, SHOW and SUMMARIZE are SELECT statements to DuckDB (a SELECT * over a ``SHOW_REF``
the parser makes up); by shape they are not queries, as EXPLAIN and SHOW are not in the
PostgreSQL ground truth, so they are non-reads here too. ``SELECT * FROM (DESCRIBE t)``,
written as a query, is a read.
"""

from __future__ import annotations

import json
import re

import duckdb

from sql_ground_truth import Truth
from sql_side_effects import FunctionCatalog

_PATH_LIKE = re.compile(r"[/\\]|://|\.(csv|tsv|parquet|json|jsonl|ndjson|txt|gz|zst|arrow|xlsx|db|duckdb|sqlite)$",
                        re.IGNORECASE)


class DuckDBGroundTruth:
    """Classifies DuckDB statements with an in-memory DuckDB's parser (nothing is run)."""

    def __init__(self, catalog: FunctionCatalog):
        self.catalog = catalog
        self._connection = duckdb.connect()

    def close(self) -> None:
        self._connection.close()

    def classify(self, sql: str) -> Truth | None:
        try:
            statements = self._connection.extract_statements(sql)
        except duckdb.Error:
            return None
        if not statements:
            return None
        if len(statements) > 1:
            return Truth(False, "multiple statements", ("multiple statements",))
        kind = statements[0].type.name
        if kind != "SELECT":
            return Truth(False, kind, (kind,))
        serialised = json.loads(self._connection.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
        if serialised.get("error"):
            return None
        reasons = list(dict.fromkeys(self._reasons(serialised["statements"])))
        if any(_is_show_statement(statement.get("node", {})) for statement in serialised["statements"]):
            return Truth(False, "DESCRIBE / SHOW / SUMMARIZE", ("DESCRIBE / SHOW / SUMMARIZE", *reasons))
        return Truth(not reasons, kind, tuple(reasons))

    def _reasons(self, tree: object) -> list[str]:
        found = []
        stack = [tree]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(item)
                continue
            if not isinstance(item, dict):
                continue
            if item.get("class") == "FUNCTION" and (what := self.catalog.side_effect(item.get("function_name", ""))):
                found.append(f"{item['function_name']}(): {what}")
            if item.get("type") == "BASE_TABLE" and _PATH_LIKE.search(item.get("table_name", "")):
                found.append(f"'{item['table_name']}': a file read as a table")
            stack.extend(value for value in item.values() if isinstance(value, (dict, list)))
        return found


_NO_LOCATION = 2**64 - 1  # what DuckDB's parser puts on nodes it made up


def _is_show_statement(node: dict) -> bool:
    """DESCRIBE / SHOW / SUMMARIZE: a SELECT over a SHOW_REF whose select list nobody wrote."""
    return (node.get("type") == "SELECT_NODE" and (node.get("from_table") or {}).get("type") == "SHOW_REF"
            and all(item.get("query_location") == _NO_LOCATION for item in node.get("select_list", [])))
