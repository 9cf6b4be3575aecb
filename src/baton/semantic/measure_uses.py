"""What a metric reads: each measure, the days its time is moved, its cumulative window.

A derived metric's input from an earlier period is named ``bookings__offset_14``
(``expressions.OFFSET_MARK``: MetricFlow's ``offset_window``); a cumulative metric carries its
window (``Metric.cumulative``). The compiler groups measures into branches by these, and names
each one's column in the stacked branches (``stacked_name``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.expressions import OFFSET_MARK, parse_metric_expression
from baton.semantic.model import SemanticModel

if TYPE_CHECKING:
    from sqlglot import exp


Use = tuple[str, int, str]  # (measure, days its time is moved, cumulative window: Metric.cumulative)


def measure_uses(model: SemanticModel, name: str, offset: int = 0) -> list[Use]:
    """Each (measure, days its time is moved, cumulative window) a metric reads, in a stable order."""
    return list(dict.fromkeys(use for _, use in leaves(model, name, offset)))


def leaves(model: SemanticModel, name: str, offset: int = 0) -> list[tuple[str, Use]]:
    """Each simple metric a metric reads (at any depth), with the measure use it reads it by."""
    from sqlglot import exp

    metric = model.metric(name)
    if metric.type == "simple":
        return [(name, (metric.measure or "", offset, metric.cumulative))]
    if metric.type == "ratio":
        return [*leaves(model, metric.numerator or "", offset), *leaves(model, metric.denominator or "", offset)]
    out: list[tuple[str, Use]] = []
    for column in parse_metric_expression(metric.expr or "", f"metric {name}").find_all(exp.Column):
        found = leaves(model, column.name.split(OFFSET_MARK)[0], offset + offset_of(column))
        spined = f"to_grain:{to_grain(column)}" if to_grain(column) else ""
        if spined:  # timespine.cumulative_part reads it over the spine: at the start of the period, or months earlier
            if any(c for _, (_, _, c) in found):
                from baton.semantic.query import SemanticQueryError

                raise SemanticQueryError("offset_to_grain or an offset_window of months over a cumulative metric or "
                                         "another of them, which Baton does not compute yet")
            found = [(leaf, (measure, days, spined)) for leaf, (measure, days, _) in found]
        out += found
    return out


def conversion_inside(model: SemanticModel, name: str) -> bool:
    """Whether ``name`` is or reads a conversion metric (``conversion.py`` answers one alone)."""
    metric = model.metric(name)
    if metric.conversion is not None:
        return True
    if metric.type == "simple":
        return False
    if metric.type == "ratio":
        return conversion_inside(model, metric.numerator or "") or conversion_inside(model, metric.denominator or "")
    from sqlglot import exp

    columns = parse_metric_expression(metric.expr or "", f"metric {name}").find_all(exp.Column)
    return any(conversion_inside(model, c.name.split(OFFSET_MARK)[0]) for c in columns)


def query_uses(model: SemanticModel, metrics: tuple[str, ...]) -> list[Use]:
    """What a query's metrics read, for the compiler; a conversion metric is ``conversion.py``'s (asked alone)."""
    if any(conversion_inside(model, name) for name in metrics):
        from baton.semantic.query import SemanticQueryError

        raise SemanticQueryError("a conversion metric beside other metrics or under a ratio or derived metric, "
                                 "which Baton does not compute yet")
    return list(dict.fromkeys(use for name in metrics for use in measure_uses(model, name)))


def needs_time(model: SemanticModel, metric: str) -> bool:
    """Whether ``metric`` reads an input from an earlier period, so is asked by metric time only."""
    return any(offset or cumulative for _, offset, cumulative in measure_uses(model, metric))


def offset_of(column: exp.Column) -> int:
    """The days a derived metric's input is moved: ``bookings__offset_14`` (``expressions.OFFSET_MARK``)."""
    _, _, days = column.name.partition(OFFSET_MARK)
    return int(days) if days.isdigit() else 0


def to_grain(column: exp.Column) -> str:
    """How a derived metric's input is read over the time spine: at the start of a grain, ``bookings__offset_month``
    (MetricFlow's ``offset_to_grain``), or months earlier, ``bookings__offset_m1`` (an ``offset_window`` of
    months or years: ``months_earlier``); else ``""``."""
    _, _, grain = column.name.partition(OFFSET_MARK)
    return "" if grain.isdigit() else grain


def months_earlier(spec: str) -> int:
    """The months of a ``to_grain`` spec that is an offset_window of months (``m1``) or years (``y1``: 12), else 0."""
    return int(spec[1:]) * (12 if spec[0] == "y" else 1) if spec[:1] in ("m", "y") and spec[1:].isdigit() else 0


def custom_offset(spec: str) -> tuple[int, str] | None:
    """(count, custom grain) of a ``to_grain`` spec that is an offset_window of custom periods (``g1_alien_day``)."""
    count, _, grain = spec[1:].partition("_")
    return (int(count), grain) if spec[:1] == "g" and count.isdigit() and grain else None


def metric_filters_of(model: SemanticModel, measure: str) -> tuple[tuple[str, str, str, str], ...]:
    """A measure's own ``Metric(...)`` filters (a MetricFlow metric's ``filter:``), each a query's metric filter
    (metric, dimension, operator, number); ``SemanticQueryError`` where its dimension does not reach the measure."""
    found = model.measure(measure).metric_filters
    for metric, dimension, _, _ in found:
        if not model.has_dimension(dimension) or not model.reachable(measure, dimension):
            from baton.semantic.query import SemanticQueryError

            raise SemanticQueryError(f"a Metric({metric!r}) filter by {dimension}, which does not reach the measure "
                                     f"{measure}: Baton does not compute it yet")
    return found


def stacked_name(use: Use) -> str:
    """A measure's column in the stacked branches (``m_bookings``; ``m_bookings__offset_14`` moved 14 days;
    ``m_txn_revenue__c_window_2_month`` over a cumulative window)."""
    name, offset, cumulative = use
    suffix = "".join(ch if ch.isalnum() else "_" for ch in cumulative)
    stacked = f"m_{name}" + (f"__offset_{offset}" if offset else "") + (f"__c_{suffix}" if cumulative else "")
    if len(stacked) <= 60:
        return stacked
    import hashlib  # PostgreSQL cuts names at 63 bytes: two long ones would become one (a filtered input's copy)

    return f"{stacked[:47]}_{hashlib.sha256(stacked.encode()).hexdigest()[:12]}"


__all__ = ["Use", "conversion_inside", "custom_offset", "leaves", "measure_uses", "metric_filters_of", "months_earlier", "needs_time", "offset_of", "query_uses", "stacked_name", "to_grain"]
