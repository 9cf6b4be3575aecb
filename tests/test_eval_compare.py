"""Result-set equivalence, ORDER BY detection, the meter, percentiles and the gate's edges."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import pytest

from baton.errors import ConfigurationError
from baton.evaluation import EvalRun, Meter, Prices, QuestionResult, Tolerance, compare_results, compare_to_baseline, gold_orders
from baton.evaluation.summary import percentile
from baton.llm import FunctionModel, ScriptedModel
from baton.messages import LLMResponse, Message


def same(expected, produced, ordered=False, tolerance=None):
    return compare_results(expected, produced, ordered=ordered, tolerance=tolerance)


def test_column_names_and_order_do_not_matter_but_the_number_of_columns_does():
    assert same([[1, "a", 2.5], [2, "b", 3.5]], [[3.5, 2, "b"], [2.5, 1, "a"]]).equal
    verdict = same([[1, "a"]], [[1, "a", "extra"]])
    assert not verdict.equal and verdict.reason == "3 column(s), expected 2"


def test_row_order_matters_only_when_asked():
    assert same([[1], [2], [3]], [[3], [1], [2]]).equal
    verdict = same([[1], [2], [3]], [[3], [1], [2]], ordered=True)
    assert not verdict.equal and verdict.reason == "the right rows in the wrong order"
    assert same([[1, "x"], [2, "y"]], [["x", 1], ["y", 2]], ordered=True).equal


def test_duplicates_count():
    assert not same([["a"], ["a"], ["b"]], [["a"], ["b"], ["b"]]).equal
    assert same([["a"], ["a"], ["b"]], [["b"], ["a"], ["a"]]).equal
    assert same([["a"], ["a"], ["b"]], [["a"], ["b"]]).reason == "2 row(s), expected 3"


def test_numbers_compare_within_the_tolerance_and_across_types():
    assert same([[0.3]], [[0.1 + 0.2]]).equal
    assert same([[3]], [[3.0]]).equal and same([[Decimal("2.50")]], [[2.5]]).equal and same([[True]], [[1]]).equal
    assert not same([[14089.17]], [[84535 / 6]]).equal
    assert same([[14089.17]], [[84535 / 6]], tolerance=Tolerance(abs=0.005)).equal
    assert not same([[11.5]], [[11.49]], tolerance=Tolerance(abs=0.005)).equal
    assert same([[1_000_000.0]], [[1_000_001.0]], tolerance=Tolerance(abs=0, rel=1e-5)).equal
    assert not same([[2**63 - 1]], [[2**63 - 2]]).equal  # big integers stay exact


def test_text_dates_and_nulls():
    assert not same([["3"]], [[3]]).equal  # text is not a number
    assert same([[dt.date(2025, 1, 31)]], [["2025-01-31"]]).equal
    assert same([[dt.datetime(2025, 1, 31, 8, 30)]], [["2025-01-31 08:30:00"]]).equal
    assert same([[None, 1]], [[1, None]]).equal and not same([[None]], [[0]]).equal
    assert same([[b"\x01\xff"]], [["01ff"]]).equal
    assert same([], []).equal and not same([[1]], []).equal


def test_columns_with_identical_values_are_matched_by_rows():
    # two columns hold the same multiset of values; only one assignment makes the rows match
    assert same([[1, 2], [2, 1]], [[2, 1], [1, 2]]).equal
    assert not same([[1, 2], [2, 1]], [[1, 1], [2, 2]]).equal


def test_values_either_side_of_a_rounding_boundary_still_match():
    tol = Tolerance(abs=1e-6)
    expected = [[0.9999999999, "a"], [1.0, "b"]]
    produced = [[1.0, "a"], [0.9999999999, "b"]]
    assert same(expected, produced, tolerance=tol).equal


@pytest.mark.parametrize("sql, orders", [
    ("SELECT a FROM t ORDER BY a", True),
    ("SELECT a FROM t ORDER BY a DESC LIMIT 3", True),
    ("SELECT a FROM t", False),
    ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", False),
    ("SELECT a, rank() OVER (ORDER BY a) FROM t", False),
    ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),
    ("SELECT a FROM t WHERE a IN (SELECT b FROM u ORDER BY b LIMIT 2)", False),
    ("this is not sql (((", False),
])
def test_gold_orders_reads_the_outermost_query(sql, orders):
    assert gold_orders(sql) is orders


def test_percentiles_are_nearest_rank():
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 50) == 10.0 and percentile(values, 95) == 19.0


def test_prices_parse_and_refuse_nonsense():
    prices = Prices.parse("0.15,0.60", "gpt-4o=2.5/10,anthropic:claude=3/15")
    assert prices.price_for("openai", "gpt-4o").input_per_mtok == 2.5
    assert prices.price_for("anthropic", "claude").output_per_mtok == 15
    assert prices.price_for("x", "other").input_per_mtok == 0.15
    assert Prices.parse(None, "").price_for("x", "y") is None
    for bad in ("1", "a,b", "-1,2", "1,2,3"):
        with pytest.raises(ConfigurationError):
            Prices.parse(bad)
    with pytest.raises(ConfigurationError):
        Prices.parse(None, "no-equals-sign")


def test_the_meter_keeps_concurrent_questions_apart():
    async def slow(messages, tools):
        await asyncio.sleep(0.01 * len(messages[-1].content))
        return LLMResponse(content="ok", usage={"input_tokens": 7, "output_tokens": 3})

    meter = Meter(Prices.parse("1,1"))
    model = meter.wrap(FunctionModel(slow, model="slow"))

    async def question(calls: int):
        with meter.question() as usage:
            for _ in range(calls):
                await model.complete([Message.user("x" * calls)])
            return usage

    async def main():
        return await asyncio.gather(question(1), question(3), question(2))

    one, three, two = asyncio.run(main())
    assert (one.calls, three.calls, two.calls) == (1, 3, 2)
    assert three.input_tokens == 21 and three.cost_usd == pytest.approx(30 / 1_000_000)
    assert meter.total.calls == 6 and meter.unattributed == 0


def test_the_meter_counts_streams_failures_and_unpriced_calls_and_forwards_the_rest():
    meter = Meter()  # no prices
    scripted = ScriptedModel([LLMResponse(content="a b c", usage={"input_tokens": 4, "output_tokens": 2}), RuntimeError("down")],
                             context_window=4096)
    model = meter.wrap(scripted)
    assert model.context_window == 4096 and model.provider == "scripted" and model.remaining == 2

    async def main():
        with meter.question() as usage:
            chunks = [c async for c in model.stream([Message.user("hi")])]
            with pytest.raises(RuntimeError):
                await model.complete([Message.user("again")])
            return usage, chunks

    usage, chunks = asyncio.run(main())
    assert "".join(c.delta for c in chunks) == "a b c"
    assert usage.calls == 2 and usage.tokens == 6 and usage.unpriced_calls == 1 and usage.cost_usd == 0
    assert usage.models == {"scripted:scripted-model"}


def test_not_llms_are_not_wrapped():
    from baton.agents import LexicalRouter

    meter = Meter()
    router = LexicalRouter()
    assert meter.wrap(router) is router and meter.wrap(None) is None
    wrapped = meter.wrap(ScriptedModel([]))
    assert meter.wrap(wrapped) is wrapped


def _run(*results: QuestionResult) -> EvalRun:
    return EvalRun("s", "test", list(results))


def test_the_gate_compares_only_questions_scored_in_both_runs():
    base = _run(QuestionResult("a", "A", status="pass", execution=True), QuestionResult("b", "B", status="pass", execution=True))
    now = _run(QuestionResult("a", "A", status="pass", execution=True), QuestionResult("b", "B", status="skipped"))
    gate = compare_to_baseline(now, base)
    assert gate.passed and gate.compared == 1 and gate.regressions == []

    nothing = compare_to_baseline(_run(QuestionResult("z", "Z", status="pass", execution=True)), base)
    assert not nothing.passed and "shares no scored question" in nothing.problems[0]

    worse = _run(QuestionResult("a", "A", status="fail", execution=True, routing=False, reasons=["routed to x"]),
                 QuestionResult("b", "B", status="pass", execution=True))
    base_routed = _run(QuestionResult("a", "A", status="pass", execution=True, routing=True),
                       QuestionResult("b", "B", status="pass", execution=True))
    gate = compare_to_baseline(worse, base_routed)
    assert not gate.passed and [r.id for r in gate.regressions] == ["a"] and gate.regressions[0].reasons == ["routed to x"]
    assert gate.figures["execution accuracy"] == (1.0, 1.0) and gate.figures["routing accuracy"] == (1.0, 0.0)
