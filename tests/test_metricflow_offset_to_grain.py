"""MetricFlow's ``offset_to_grain`` on derived metrics (issue 27): an input's value at the start of its
period, over the project's time spine, against MetricFlow's own cases; what is not computed is refused by name."""

from __future__ import annotations

import pytest

from baton.semantic.compiler import compile_query
from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQueryError
from itest_cases import MODELS, all_cases
from itest_duckdb import duckdb_outcomes

COMPUTED = {"derived_metric_with_offset_to_grain", "derived_metric_with_offset_to_grain_and_granularity",
            "offset_to_grain_with_agg_time_dim", "nested_derived_metric_outer_offset_multiple_input_metrics"}


def test_metricflow_offset_to_grain_cases_pass():
    cases = [c for c in all_cases() if c["name"] in COMPUTED]
    assert len(cases) == len(COMPUTED)

    results = duckdb_outcomes(cases)
    assert all(kind == "passed" for _, kind, _ in results), results


@pytest.mark.parametrize(("params", "dialect"), [
    ({"metrics": ["bookings_growth_since_start_of_month"], "group_by": ["metric_time__day"]}, "sqlite"),  # no spine SQL
    ({"metrics": ["bookings_growth_since_start_of_month"]}, "duckdb"),  # not by metric time
    ({"metrics": ["bookings_growth_since_start_of_month"], "group_by": ["listing"]}, "duckdb"),
    ({"metrics": ["bookings_since_start_of_month"], "group_by": ["metric_time__day"]}, "duckdb"),  # over a cumulative
])
def test_what_is_not_computed_is_refused_by_name(params, dialect):
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    with pytest.raises(SemanticQueryError, match="does not compute yet"):
        compile_query(model, query_from_params(model, params), dialect)
