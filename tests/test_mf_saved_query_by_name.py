"""A MetricFlow saved query asked by name with the request's own where, order and limit
(``mf query --saved-query p0_booking --where ... --order-by ... --limit``): its where filters and the
request's ANDed, the request's order and limit in place of its own — as MetricFlow's
``parse_and_validate_saved_query``. The rows are checked against MetricFlow's own in the parity
cases (s103, s104: ``tests/test_metricflow_projects.py``); these check the reading.
"""

from __future__ import annotations

import pytest

from baton.semantic.loading import load_model
from baton.semantic.mf_query import query_from_params, saved_query_params
from baton.semantic.query import SemanticQueryError
from metricflow_projects import PROJECTS

INSTANT = "{{ Dimension('booking__is_instant') }}"


@pytest.fixture(scope="module")
def model():
    return load_model(PROJECTS["simple_manifest"])


def test_the_request_where_is_anded_to_the_saved_querys_and_its_order_and_limit_replace_none(model):
    asked = query_from_params(model, {"saved_query": "p0_booking", "where": [INSTANT], "order_by": ["-bookings"], "limit": 5})
    spelled = query_from_params(model, {
        "metrics": ["bookings", "instant_bookings"],
        "group_by": ["TimeDimension('metric_time', 'day')", "Dimension('listing__capacity_latest')"],
        "where": ["{{ Dimension('listing__capacity_latest') }} > 3", INSTANT], "order_by": ["-bookings"], "limit": 5})
    assert asked == spelled
    assert len(asked.conditions) == 2 and asked.limit == 5


def test_the_saved_querys_own_order_and_limit_hold_when_the_request_gives_none(model):
    capacity = "{{ Dimension('listing__capacity_latest') }} > 3"
    params = saved_query_params(model, {"saved_query": "p0_booking_with_order_by_and_limit", "where": [capacity]})
    assert params["limit"] == 10 and params["where"] == [capacity]
    query = query_from_params(model, params)
    # TimeDimension('metric_time', 'day').descending(True), Dimension(...), Metric('bookings').descending(True), Metric('views')
    assert [desc for _, desc in query.order] == [True, False, True, False]
    assert query.order[2] == ("bookings", True) and query.limit == 10


@pytest.mark.parametrize("params, words", [
    ({"saved_query": "p0_booking", "metrics": ["bookings"]}, "beside a saved query"),
    ({"saved_query": "no_such_saved_query"}, "no saved query"),
])
def test_what_metricflow_refuses_is_refused(model, params, words):
    with pytest.raises(SemanticQueryError, match=words):
        query_from_params(model, params)
