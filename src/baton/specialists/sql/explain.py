"""EXPLAIN dry-run: find full scans of big tables before a query runs.

Optional per connection (``ConnectionOptions.explain``). Each engine's plan is read in its
own format:

- PostgreSQL ``EXPLAIN (FORMAT JSON)``: every ``Seq Scan`` node and its ``Relation Name``.
- MySQL/MariaDB tabular ``EXPLAIN`` (the one format both servers share): rows whose access
  ``type`` is ``ALL``, with the server's ``rows`` estimate.
- SQLite ``EXPLAIN QUERY PLAN``: ``SCAN <table>`` (a full pass) versus ``SEARCH`` (an index).
- DuckDB ``EXPLAIN (FORMAT JSON)``: ``SEQ_SCAN``/``TABLE_SCAN`` nodes and their ``Table``.

A scan is flagged when the table holds at least ``full_scan_row_threshold`` rows (the
schema's row estimate, else the plan's) and the query has no top-level ``LIMIT``: a LIMIT
lets the engine stop early and the repair prompt asks for exactly that (or a filter). The
EXPLAIN statement is built by us around SQL that already passed the safety check, and it
runs through the same read-only guard and timeout as any query (EXPLAIN without ANALYZE
does not execute the statement).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from baton.specialists.sql.schema import SchemaInfo

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection


@dataclass(frozen=True, slots=True)
class FullScan:
    table: str
    rows: int | None  # the table's size as far as the catalogue or the plan knows


@dataclass(slots=True)
class PlanCheck:
    scans: list[FullScan]  # every full scan in the plan
    flagged: list[FullScan]  # the ones over the threshold, when the query has no LIMIT

    @property
    def ok(self) -> bool:
        return not self.flagged


async def check_plan(conn: SQLConnection, sql: str, schema: SchemaInfo) -> PlanCheck:
    """EXPLAIN ``sql`` on ``conn`` and flag full scans of big tables."""
    explain_sql = conn.kind.explain_sql(sql)
    plan = await conn.execute_readonly(explain_sql, row_cap=10_000)
    scans = conn.kind.full_scans(plan.columns, plan.rows)
    threshold = conn.options.full_scan_row_threshold
    flagged: list[FullScan] = []
    if not has_top_level_limit(sql, conn.dialect):
        for scan in scans:
            table = schema.table(scan.table)
            size = table.row_estimate if table is not None and table.row_estimate is not None else scan.rows
            if size is not None and size >= threshold:
                flagged.append(FullScan(scan.table, size))
    return PlanCheck(scans, flagged)


def postgres_full_scans(columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
    """``EXPLAIN (FORMAT JSON)``: every Seq Scan node."""
    document = rows[0][0] if rows else []
    if isinstance(document, str):
        document = json.loads(document)
    return [
        FullScan(node["Relation Name"], _int(node.get("Plan Rows")))
        for node in _walk_pg(document)
        if node.get("Node Type") == "Seq Scan" and node.get("Relation Name")
    ]


def duckdb_full_scans(columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
    """``EXPLAIN (FORMAT JSON)``: every table scan operator."""
    scans = []
    for row in rows:
        document = json.loads(row[-1]) if isinstance(row[-1], str) else row[-1]
        for node in _walk_duckdb(document):
            extra = node.get("extra_info") or {}
            if node.get("name") in ("SEQ_SCAN", "TABLE_SCAN", "SEQ_SCAN ") and extra.get("Table"):
                scans.append(FullScan(str(extra["Table"]).split(".")[-1], _int(extra.get("Estimated Cardinality"))))
    return scans


def mysql_full_scans(columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
    """Tabular ``EXPLAIN``: access type ``ALL`` on a real table (not a derived ``<...>`` one)."""
    index = {name.lower(): i for i, name in enumerate(columns)}
    return [
        FullScan(str(row[index["table"]]), _int(row[index["rows"]]))
        for row in rows
        if str(row[index["type"]]).upper() == "ALL" and row[index["table"]] and not str(row[index["table"]]).startswith("<")
    ]


def sqlite_full_scans(columns: list[str], rows: list[list[Any]]) -> list[FullScan]:
    """``EXPLAIN QUERY PLAN``: ``SCAN t`` lines that are not constants, subqueries or co-routines."""
    scans = []
    for row in rows:
        match = re.match(r"SCAN (?:TABLE )?(\S+)", str(row[-1]))
        if match and match.group(1).upper() not in ("CONSTANT", "SUBQUERY") and "CO-ROUTINE" not in str(row[-1]):
            scans.append(FullScan(match.group(1), None))
    return scans


def has_top_level_limit(sql: str, dialect: str) -> bool:
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError:
        return False
    return tree.args.get("limit") is not None or tree.args.get("fetch") is not None or isinstance(tree, exp.Values)


def _walk_pg(document: Any) -> Iterator[dict[str, Any]]:
    items = document if isinstance(document, list) else [document]
    for item in items:
        plan = item.get("Plan", item) if isinstance(item, dict) else None
        if not isinstance(plan, dict):
            continue
        stack = [plan]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.get("Plans") or [])


def _walk_duckdb(document: Any) -> Iterator[dict[str, Any]]:
    stack = list(document) if isinstance(document, list) else [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.get("children") or [])


def _int(value: Any) -> int | None:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None
