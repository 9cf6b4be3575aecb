"""A dbt MetricFlow project as Baton's semantic model: what it computes, and what it refuses by name.

The project is read as it is (``mf_project.py``: a directory, a file, MetricFlow's test
format, a ``semantic_manifest.json``). How it maps (metrics in ``mf_metrics.py``):

- each **semantic model** is one Baton entity named after it, reading the table of its
  ``model: ref('table')`` or ``node_relation``;
- **entities**: a semantic model joins every other one whose ``primary``, ``unique`` or
  ``natural`` entity has the name of one of its own entities (foreign: many-to-one; primary
  to primary: one-to-one), on the two ``expr`` columns; a foreign entity that no semantic
  model has as primary is simply not joined. An entity is also a dimension of its own
  (``customer``: the key), so "revenue by customer" groups by it, beside the entity's name
  dimension when it has one;
- **dimensions**: a categorical dimension keeps its name when no other semantic model uses it,
  else it is named as MetricFlow qualifies it (``customer__country``); every dimension also
  answers to MetricFlow's qualified names in structured queries. The ``agg_time_dimension``
  (the semantic model's default, or a measure's own) is the time a measure is counted by; its
  ``expr`` may be SQL of the allowed subset (``cast(ordered_at as date)``). MetricFlow assumes
  DATE or TIMESTAMP columns: a column stored as text says how in
  ``config.meta.baton_time_format`` (``month``, ``date``, ``timestamp``), else it is ``native``;
- **measures**: ``sum``, ``count``, ``count_distinct``, ``min``, ``max``, ``average``,
  ``sum_boolean`` (as a sum of ``CASE WHEN ... THEN 1 ELSE 0 END``: PostgreSQL has no
  ``sum(boolean)``), ``percentile`` and ``median`` (``percentile.py``: DuckDB and PostgreSQL);
  ``create_metric: true`` makes its simple metric.

Computed too (issue 27): ``non_additive_dimension`` (``semi_additive.py``), ``offset_window`` of
days and weeks, ``join_to_timespine`` over the project's time spine (beside other metrics, under
ratio and derived metrics), cumulative metrics by day (offset by days too; all-time ones without metric
time as a plain aggregate; by week to year or a custom grain their ``period_agg`` of the days, ``period_agg.py``), ``offset_window`` of months and years over the spine
and ``offset_to_grain`` by metric time (``timespine.py``; at several grains, whole periods or days as
MetricFlow joins them, ``spine_keys.py``), ``offset_window`` of custom periods (``custom_offsets.py``), conversion metrics with windows of
days or weeks (``conversion.py``), a metric's ``time_granularity``, partition joins, SCD ``validity_params`` and a join path per
multi-hop target (``joins.py``), queries with no metric over several semantic models
or with a ``Metric(...)`` filter, read where MetricFlow reads them (``joined_values.py``, ``mf_ranking.py``), ``where`` filters
comparing metric time with dates (``time_filters.py``: the days they keep, as periods), the time
spine's custom granularities as grains, in group-bys and filters (``custom_grains.py``), time
dimensions other than metric time, metric time at several grains, ``date_part`` and sub-daily grains
in group-bys (``timegroup.py``) and queries with no metric over time (``spine_rows.py``), filters
on ratio and derived metrics and on their inputs (a filtered copy of the input metric; a
``Metric(...)`` compared with a number as its measure's ``metric_filters``), derived expressions
with ``NULLIF``/``COALESCE``/``CASE``.

**Never silently**: a construct Baton does not compute yet — percentiles on SQLite and MariaDB,
conversion windows of months, ``offset_to_grain`` and month offsets over cumulative metrics,
``TimeDimension`` in metric filters — is
a ``Refusal`` of the metric (or dimension, or saved query) that needs it, with its file and
line: ``baton semantic check`` lists them and fails, and a question that needs one is told
so by name, never answered without it. Errors in the project itself (an unknown measure, a
cycle of derived metrics, unknown Jinja, an unknown key) stop the load with file and line.

Synonyms, which MetricFlow has no field for, are read from ``config.meta.synonyms`` (or
``meta.synonyms``) of metrics, dimensions and semantic models; a dimension with
``config.meta.hidden: true`` serves metric filters only, never questions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.semantic.errors import SemanticModelError
from baton.semantic.mf_metrics import build_model
from baton.semantic.mf_project import MetricFlowProject, check_schema, collect_documents, read_project
from baton.semantic.model import SemanticModel


def model_from_project(project: MetricFlowProject, *, default_name: str = "metricflow") -> SemanticModel:
    """A checked ``SemanticModel`` from a read project (module docstring)."""
    try:
        return build_model(project, default_name)
    except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a manifest's shape is not schema-checked
        raise SemanticModelError(f"{project.root}: not a well-formed MetricFlow project ({type(exc).__name__}: "
                                 f"{str(exc)[:200]})") from None


def model_from_metricflow(data: Any, *, default_name: str = "metricflow") -> SemanticModel:
    """A checked ``SemanticModel`` from one parsed MetricFlow YAML document."""
    if not isinstance(data, Mapping):
        raise SemanticModelError("a MetricFlow file is a YAML mapping with semantic_models and metrics")
    project = MetricFlowProject(Path(default_name))
    collect_documents(project, [data], Path(default_name))
    check_schema(project)
    return model_from_project(project, default_name=default_name)


def load_metricflow(path: str | Path, documents: list[object] | None = None) -> SemanticModel:
    """A checked ``SemanticModel`` from a project directory, a YAML file (``documents``: its
    documents, already read) or a manifest."""
    project = read_project(path, documents)
    name = Path(path).name if Path(path).is_dir() else Path(path).stem
    return model_from_project(project, default_name=name or "metricflow")


__all__ = ["load_metricflow", "model_from_metricflow", "model_from_project"]
