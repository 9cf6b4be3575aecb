"""Checking a semantic model against a database, and drafting one from a database's schema.

``check_model`` (``baton semantic check FILE --database URL``):

1. every entity's table exists, and every column the model names — time columns, join keys
   on both sides, the columns of each measure's expression and filter, of each dimension —
   exists in its table (the introspected schema, as pre-validation sees it);
2. every metric compiles and runs (its total, through the layer's validation pass: the
   safety check and the read-only engine), with the value it returned;
3. a sample of the indexed values of each dimension, and the years the data covers.

``draft_model`` (``baton semantic init --database URL``) writes a first model for a person
to edit: one entity per table (its time column: the first DATE/TIMESTAMP column, or a text
column named like a date whose first value looks like ``YYYY-MM``, ``YYYY-MM-DD`` or a
timestamp), joins from foreign keys, a ``sum`` measure and simple metric per numeric
column that is no key, a row count per table, a categorical dimension per text column; the
database's table and column comments become their descriptions.
Decisions: names are the tables' and columns' own (prefixed with the table when two tables
share a column name); nothing is guessed about units or soft deletes — the draft says so at
the top, because cents and ``deleted_at`` are exactly what a person must add.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from baton.semantic.expressions import columns_of, render_sql
from baton.semantic.layer import SemanticLayer
from baton.semantic.model import SemanticModel
from baton.semantic.query import SemanticQuery

if TYPE_CHECKING:
    from baton.specialists.sql.engines import SQLConnection

SAMPLE = 5
_NUMERIC = re.compile(r"int|real|double|float|numeric|decimal|number|money", re.IGNORECASE)
_TEMPORAL = re.compile(r"date|time", re.IGNORECASE)
_TEXT = re.compile(r"char|text|string|varchar|clob", re.IGNORECASE)
_DATE_NAME = re.compile(r"(date|_at|month|day|time|period)$", re.IGNORECASE)
DRAFT_HEADER = (
    "# A draft semantic model written by `baton semantic init` from the database's schema.\n"
    "# Edit it before use: units (cents -> currency: expr: amount_cents / 100.0), soft deletes\n"
    "# (filter: deleted_at IS NULL), metric names and synonyms people use, derived metrics\n"
    "# (type: derived, expr: revenue - cost) and ratios. Then: baton semantic check FILE --database URL\n"
)


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    metrics: list[tuple[str, bool, str]] = field(default_factory=list)  # (metric, ran, value or error)
    samples: dict[str, list[Any]] = field(default_factory=dict)
    years: tuple[int, ...] = ()
    refused: list[str] = field(default_factory=list)  # what the source defines and Baton does not compute, with file:line

    @property
    def ok(self) -> bool:
        return not self.problems and not self.refused and all(ran for _, ran, _ in self.metrics)


async def check_model(model: SemanticModel, connection: SQLConnection) -> CheckReport:
    report = CheckReport(refused=[r.detail for r in model.refused])
    schema = await connection.schema()
    tables = {}
    for entity in model.entities:
        table = schema.table(entity.table)
        if table is None:
            report.problems.append(f"entity {entity.name}: table {entity.table!r} does not exist")
        tables[entity.name] = table

    def need(entity: str, columns: Any, what: str) -> None:
        table = tables.get(entity)
        if table is None:
            return
        for column in columns:
            if table.column(column) is None:
                report.problems.append(f"{what}: column {column!r} is not in table {table.name!r}")

    for entity in model.entities:
        if entity.time is not None:
            need(entity.name, columns_of(entity.time.column, f"entity {entity.name} time"), f"entity {entity.name} time")
        for join in entity.joins:
            need(entity.name, [local for local, _ in join.on], f"entity {entity.name} join to {join.to}")
            need(join.to, [remote for _, remote in join.on], f"entity {entity.name} join to {join.to}")
    for measure in model.measures:
        need(measure.entity, columns_of(measure.expr, f"measure {measure.name}"), f"measure {measure.name}")
        if measure.time is not None:
            need(measure.entity, columns_of(measure.time.column, f"measure {measure.name} time"), f"measure {measure.name} time")
        if measure.filter:
            need(measure.entity, columns_of(measure.filter, f"measure {measure.name} filter", dimensions=True), f"measure {measure.name} filter")
    for dimension in model.dimensions:
        need(dimension.entity, columns_of(dimension.expr, f"dimension {dimension.name}"), f"dimension {dimension.name}")
    layer = SemanticLayer(model, connection)
    await layer.ready()
    for metric in model.metrics:
        try:
            _, run = await layer.run(SemanticQuery((metric.name,)))
        except Exception as exc:  # a metric that does not compile is a finding, not a crash
            report.metrics.append((metric.name, False, str(exc)))
            continue
        if run.result is None:
            report.metrics.append((metric.name, False, f"{run.attempt.error_class or 'error'}: {run.attempt.error}"))
        else:
            value = run.result.rows[0][0] if run.result.rows else None
            report.metrics.append((metric.name, True, str(value)))
    report.samples = {d.name: list(layer.values.get(d.name, {}))[:SAMPLE] for d in model.dimensions}
    report.years = layer.years
    return report


async def _time_format(connection: SQLConnection, table: str, column: str, type_name: str) -> str | None:
    if _TEMPORAL.search(type_name) and not _TEXT.search(type_name):
        return "native"
    if not _TEXT.search(type_name or "text") or not _DATE_NAME.search(column):
        return None
    from sqlglot import exp

    sql = exp.select(exp.column(column)).from_(exp.to_table(table)).where(exp.column(column).is_(exp.Null()).not_()).limit(1)
    try:
        result = await connection.query(render_sql(sql, connection.dialect))
    except Exception:
        return None
    value = str(result.rows[0][0]) if result.rows else ""
    if re.fullmatch(r"\d{4}-\d{2}", value):
        return "month"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return "date"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?", value):
        return "timestamp"
    return None


async def draft_model(connection: SQLConnection, name: str = "draft") -> dict[str, Any]:
    """A draft model (the YAML's dict form) for the database (module docstring)."""
    schema = await connection.schema()
    tables = sorted(schema.tables.values(), key=lambda t: t.name)
    counts: dict[str, int] = {}
    for table in tables:
        for column in table.columns:
            counts[column.name.lower()] = counts.get(column.name.lower(), 0) + 1
    plain = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}\Z")

    def unique(table: str, column: str) -> str:
        return column if counts[column.lower()] == 1 else f"{table}_{column}"

    entities, measures, metrics, dimensions = [], [], [], []
    for table in tables:
        if not plain.match(table.name):
            continue
        keys = {c.name for c in table.columns if c.primary_key}
        foreign = {col for fk in table.foreign_keys for col in fk.columns}
        entity: dict[str, Any] = {"name": table.name, "table": table.name, **_described(table.description)}
        time_column = None
        for column in table.columns:  # a key may hold the time (monthly_revenue's is (month, product_id))
            if column.name in foreign or not plain.match(column.name) or (column.name in keys and len(keys) == 1):
                continue
            fmt = await _time_format(connection, table.name, column.name, column.type or "")
            if fmt is not None:
                entity["time"] = {"column": column.name, "format": fmt}
                time_column = column.name
                break
        joins = [{"to": fk.ref_table, "on": dict(zip(fk.columns, fk.ref_columns))} for fk in table.foreign_keys
                 if len(fk.columns) == len(fk.ref_columns) == 1 and plain.match(fk.ref_table)]
        if joins:
            entity["joins"] = joins
        entities.append(entity)
        count = f"{table.name}_count"
        measures.append({"name": count, "entity": table.name, "agg": "count", "expr": "1"})
        metrics.append({"name": count, "measure": count, "decimals": 0})
        for column in table.columns:
            if column.name in keys or column.name in foreign or column.name == time_column or not plain.match(column.name):
                continue
            if column.name.lower() == "id" or column.name.lower().endswith("_id"):
                continue
            if _NUMERIC.search(column.type or "") and not _TEMPORAL.search(column.type or ""):
                measure = f"{table.name}_{column.name}"
                measures.append({"name": measure, "entity": table.name, "agg": "sum", "expr": column.name})
                metrics.append({"name": unique(table.name, column.name), "measure": measure, **_described(column.description)})
            elif _TEXT.search(column.type or "text"):
                dimensions.append({"name": unique(table.name, column.name), "entity": table.name, "expr": column.name,
                                   **_described(column.description)})
    taken = {m["name"] for m in metrics}
    for d in dimensions:
        if d["name"] in taken:
            d["name"] = f"{d['entity']}_{d['expr']}"
    return {"name": name, "entities": entities, "measures": measures, "metrics": metrics, "dimensions": dimensions}


def _described(comment: str) -> dict[str, str]:
    """A database comment as a draft part's description (flattened, trimmed), if it has one."""
    text = " ".join(comment.split())[:300]
    return {"description": text} if text else {}


__all__ = ["CheckReport", "DRAFT_HEADER", "check_model", "draft_model"]
