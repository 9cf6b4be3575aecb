"""``present()``: the one call a specialist makes to add chart, follow-ups and insights."""

from __future__ import annotations

import copy
import subprocess
import sys
import threading

import pytest

import baton.viz.presentation as presentation
from baton.response import AIMessage, QueryResult, ResponseType
from baton.viz import choose_chart
from baton.viz.presentation import present, present_async
from baton.viz.suggest import generate_followups

RESULT = QueryResult(["region", "revenue"], [["North", 500], ["South", 200], ["East", 150], ["West", 150]],
                     ["VARCHAR", "BIGINT"])
SQL = "SELECT region, SUM(amount) AS revenue FROM orders GROUP BY region"


def answer(**changes) -> AIMessage:
    base = AIMessage(content="North leads.", input="Revenue by region", query=SQL, results=RESULT,
                     response_type=ResponseType.SQL_RESULT)
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def test_present_fills_chart_followups_and_insights_on_a_copy():
    message = answer()
    before = copy.deepcopy(message)
    shown = present(message, seed=3)
    assert shown is not message
    assert message == before  # the input is untouched
    assert shown.viz_type == "bar"
    assert shown.viz_config == choose_chart(RESULT, question="Revenue by region").viz_config
    assert shown.viz_config["title"]["text"] == "Revenue by region"
    assert shown.suggested_followups == generate_followups(SQL, RESULT.columns, 4, seed=3, result=RESULT, viz_type="bar")
    # only what fits this result (sorted by revenue already, no time column, no model-only ideas), and three of it
    assert len(shown.suggested_followups) == 3
    assert set(shown.suggested_followups) <= {"Show this as a pie chart", "Show percentage breakdown", "Sort by revenue ascending",
                                              "Show only the top 3 results", "Sort by region"}
    assert [i["kind"] for i in shown.insights] == ["top_share"]
    assert shown.content == message.content and shown.turn_id == message.turn_id


@pytest.fixture
def chart_threads(monkeypatch) -> list[int]:
    """The threads the chart was chosen on, one entry per ``choose_chart`` call."""
    threads: list[int] = []
    real = presentation.choose_chart

    def spy(*args, **kwargs):
        threads.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(presentation, "choose_chart", spy)
    return threads


async def test_present_async_dresses_in_a_worker_thread_with_the_same_result(chart_threads, monkeypatch):
    threads = chart_threads
    monkeypatch.setattr(presentation, "INLINE_ROWS", 3)  # these 4 rows count as a large result
    message = answer(input="Revenue by region, dressed off the loop")  # a question no other test dressed (the cache)
    shown = await present_async(message, seed=3)
    assert threads and threads[0] != threading.get_ident()  # not the event loop's thread
    assert shown.viz_config == present(message, seed=3).viz_config and shown is not message
    plain = AIMessage(content="Just text.")
    assert await present_async(plain) is plain


async def test_present_async_dresses_a_small_result_on_the_loop(chart_threads):
    threads = chart_threads
    message = answer(input="Revenue by region, dressed on the loop")  # 4 rows: no thread hop
    shown = await present_async(message, seed=3)
    assert threads == [threading.get_ident()]
    assert shown.viz_config == present(message, seed=3).viz_config and shown is not message


def test_present_is_deterministic_under_a_seed():
    assert present(answer(), seed=11).suggested_followups == present(answer(), seed=11).suggested_followups


def test_a_message_without_results_comes_back_unchanged():
    message = AIMessage(content="Just text.")
    assert present(message) is message


def test_a_proposed_chart_type_is_kept_when_it_fits_and_corrected_when_not():
    assert present(answer(viz_type="pie")).viz_type == "pie"
    thirty = QueryResult(["state", "sales"], [[f"s{i}", i + 1] for i in range(30)])
    assert present(answer(results=thirty, viz_type="pie")).viz_type == "bar"
    assert present(answer(viz_type="hologram")).viz_type == "bar"


def test_a_model_written_spec_is_replaced_by_one_built_from_the_rows():
    hostile = {"data": {"url": "http://attacker.example/x.json"}, "mark": "bar"}
    shown = present(answer(viz_type="bar", viz_config=hostile))
    assert "url" not in shown.viz_config["data"]
    assert len(shown.viz_config["data"]["values"]) == 4


def test_presented_answer_round_trips_through_json():
    shown = present(answer(), seed=1)
    back = AIMessage.from_json(shown.to_json())
    assert (back.viz_type, back.viz_config, back.suggested_followups, back.insights) == (
        shown.viz_type, shown.viz_config, shown.suggested_followups, shown.insights)


def test_presentation_layer_imports_nothing_above_the_protocol_layer():
    code = (
        "import sys, baton.viz.presentation, baton.viz, baton.viz.suggest, baton.viz.insights\n"
        "bad = [m for m in sys.modules if m.startswith(('baton.agents', 'baton.specialists', 'baton.loop',"
        " 'baton.memory', 'baton.pipeline', 'baton.llm', 'baton.server'))]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
