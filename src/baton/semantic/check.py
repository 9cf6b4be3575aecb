"""Checking a semantic model against a database (``baton semantic check FILE --database URL``).

1. every entity's table exists, and every column the model names — time columns, join keys
   on both sides, the columns of each measure's expression and filter, of each dimension —
   exists in its table (the introspected schema, as pre-validation sees it);
2. every metric compiles and runs (its total, through the layer's validation pass: the
   safety check and the read-only engine), with the value it returned;
3. a sample of the indexed values of each dimension, and the years the data covers.

Drafting a model from a schema is its own concept: ``draft.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from baton.semantic.compiler import needs_time
from baton.semantic.expressions import columns_of
from baton.semantic.layer import SemanticLayer
from baton.semantic.model import TIME, SemanticModel
from baton.semantic.query import SemanticQuery

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection

SAMPLE = 5


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
            need(entity.time.entity or entity.name, columns_of(entity.time.column, f"entity {entity.name} time"),
                 f"entity {entity.name} time")
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
            by_time = needs_time(model, metric.name)  # an offset_window metric is asked by day (MetricFlow's rule)
            _, run = await layer.run(SemanticQuery((metric.name,), (TIME,), "day") if by_time else SemanticQuery((metric.name,)))
        except Exception as exc:  # a metric that does not compile is a finding, not a crash
            report.metrics.append((metric.name, False, str(exc)))
            continue
        if run.result is None:
            report.metrics.append((metric.name, False, f"{run.attempt.error_class or 'error'}: {run.attempt.error}"))
        else:
            value = run.result.rows[0][-1] if run.result.rows else None
            report.metrics.append((metric.name, True, str(value)))
    report.samples = {d.name: list(layer.values.get(d.name, {}))[:SAMPLE] for d in model.dimensions}
    report.years = layer.years
    return report


__all__ = ["CheckReport", "check_model"]
