"""Routing accuracy, bounded concurrency and the verified-question set, on the demo workspace
with a FunctionModel: it routes two questions right, one to the wrong specialist and one to
two specialists, writes SQL for the SQL specialists and prose for the documents."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from baton.demo.data import build_demo_database
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.evaluation import Meter, Prices, RunOptions, Targets, demo_target, golden_set, run_eval, summarise, verified_questions
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.state.location import State

USAGE = {"input_tokens": 10, "output_tokens": 5}
ROUTES = {
    "How many Epson products are there?": ["epson_finance"],
    "How many Pokemon products are there?": ["epson_finance"],  # wrong
    "Which roadshow city sold the most tickets in 2024?": ["roadshows_finance", "general_finance"],  # one too many
    "How is profit defined?": ["finance_docs"],
}
SQL = {
    "How many Epson products are there?": "SELECT COUNT(*) FROM products WHERE unit_id = 2",
    "How many Pokemon products are there?": "SELECT COUNT(*) FROM products WHERE unit_id = 1",
    "Which roadshow city sold the most tickets in 2024?":
        "SELECT city FROM roadshow_events WHERE deleted_at IS NULL AND event_date LIKE '2024-%' "
        "GROUP BY city ORDER BY SUM(tickets_sold) DESC LIMIT 1",
}


def demo_model(in_flight: dict[str, int] | None = None) -> FunctionModel:
    async def answer(messages, tools):
        if in_flight is not None:  # how many questions are being answered at once
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
            await asyncio.sleep(0.01)
            in_flight["now"] -= 1
        names = [t.name for t in tools]
        if "run_sql" in names:
            question = next(m.content for m in messages if m.role == "user")
            if any(m.role == "assistant" and m.tool_calls for m in messages):
                return LLMResponse(content="Done.", usage=USAGE)
            return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": SQL[question]})], usage=USAGE)
        if not tools or messages[-1].role == "tool":  # a knowledge answer, or the orchestrator's last word
            return LLMResponse(content="Profit is revenue minus costs.", usage=USAGE)
        question = messages[-1].content
        return LLMResponse(tool_calls=[tool_call(n, {"question": question}) for n in ROUTES[question]], usage=USAGE)

    return FunctionModel(answer, model="demo-double")


async def _evaluate(home: Path, golden, model, *, concurrency: int = 2):
    build_demo_database(home / "demo" / "finance.sqlite", sales_rows=500)
    meter = Meter(Prices.parse("1,1"))
    metered = meter.wrap(model)
    state = State.from_env(env={}, home=home)

    async def opener(database):
        return await asyncio.to_thread(demo_target, state, metered)

    async with Targets(opener) as targets:
        verified = verified_questions((await targets.get(None)).workspace)
        run = await run_eval(golden or verified, targets, meter=meter, options=RunOptions(concurrency=concurrency))
    return run, meter, verified


def test_routing_accuracy_counts_a_wrong_and_an_extra_specialist_as_errors(tmp_path):
    golden = golden_set("routing", [
        {"id": "epson", "question": "How many Epson products are there?", "specialist": "epson_finance", "sql": SQL["How many Epson products are there?"]},
        {"id": "pokemon", "question": "How many Pokemon products are there?", "specialist": "pokemon_finance",
         "sql": "SELECT COUNT(*) FROM products WHERE unit_id = 1"},
        {"id": "tickets", "question": "Which roadshow city sold the most tickets in 2024?", "specialist": "roadshows_finance"},
        {"id": "profit", "question": "How is profit defined?", "specialist": "finance_docs"},
    ])
    run, meter, _ = asyncio.run(_evaluate(tmp_path, golden, demo_model()))
    by_id = {r.id: r for r in run.results}
    s = summarise(run.results)
    assert (s.routing.right, s.routing.out_of) == (2, 4)
    assert (s.execution.right, s.execution.out_of) == (2, 2)  # the misrouted question still got the right rows
    assert by_id["pokemon"].status == "fail" and by_id["pokemon"].execution is True
    assert by_id["pokemon"].reasons == ["routed to epson_finance; expected pokemon_finance"]
    assert by_id["tickets"].routed_to == ["roadshows_finance", "general_finance"] and by_id["tickets"].routing is False
    assert by_id["profit"].status == "pass" and by_id["profit"].valid_sql is None
    assert run.model == "function:demo-double" and not any("No model configured" in n for n in run.notes)
    # epson, pokemon: route + write + say (3 each); tickets: route + 2 per specialist + the
    # orchestrator's merge (6); profit: route + the documents' answer + the orchestrator (3)
    assert {r.id: r.llm_calls for r in run.results} == {"epson": 3, "pokemon": 3, "tickets": 6, "profit": 3}
    assert s.llm_calls == meter.total.calls == 15
    assert s.cost_usd == pytest.approx(s.tokens / 1_000_000)


def test_concurrency_is_bounded(tmp_path):
    questions = [q for q in SQL if q != "Which roadshow city sold the most tickets in 2024?"]
    golden = golden_set("bounded", [{"id": f"q{i}", "question": questions[i % 2], "sql": SQL[questions[i % 2]]} for i in range(6)])
    in_flight = {"now": 0, "max": 0}
    run, _, _ = asyncio.run(_evaluate(tmp_path, golden, demo_model(in_flight), concurrency=2))
    assert len(run.results) == 6 and run.concurrency == 2
    assert in_flight["max"] == 2


def test_the_verified_set_with_a_model_configured_still_costs_no_call(tmp_path):
    calls = {"n": 0}

    def never(messages, tools):
        calls["n"] += 1
        raise AssertionError("a verified question must not reach the model")

    run, meter, verified = asyncio.run(_evaluate(tmp_path, None, FunctionModel(never, model="never")))
    assert len(verified) == len(VERIFIED_QUESTIONS) and verified.source == "workspace:demo"
    assert {q.specialists[0] for q in verified.questions} == {v.agent for v in VERIFIED_QUESTIONS}
    assert all(q.id.startswith("verified:") and q.sql for q in verified.questions)
    s = summarise(run.results)
    assert (s.execution.right, s.execution.out_of, s.routing.right) == (10, 10, 10)
    assert s.llm_calls == meter.total.calls == calls["n"] == 0
