"""The planner: the cheap complexity check, plan JSON from the model, one repair round."""

from __future__ import annotations

import json

import pytest

from baton.agents import AgentContext
from baton.errors import ConfigurationError
from baton.events import RecordingTracker
from baton.llm.testing import ScriptedModel
from baton.pipeline import ExecutionPlan, Planner, PlanValidationError

GOOD = {
    "question": "top region, then its best product",
    "stages": [
        {"stage_id": "top", "tool": "query_database", "question": "Which region sells most?", "checkpoint": True,
         "validation": {"min_rows": 1}},
        {"stage_id": "product", "tool": "query_database", "question": "Best product in that region", "depends_on": ["top"]},
    ],
}


@pytest.mark.parametrize(
    "question",
    [
        "Find the top region, then list its best products",
        "Compare revenue in the north with revenue in the south",
        "What is the difference between tea sales and coffee sales?",
        "How many orders were there? And how many were refunded?",
        "1. count customers 2. find churned ones",
        "Show total revenue, average order value and churn rate by month",
        "North versus south",
        "Based on those results, which product should we drop?",
    ],
)
def test_multi_step_questions_need_a_plan(question):
    assert Planner().needs_plan(question)


@pytest.mark.parametrize(
    "question",
    ["How many customers do we have?", "Show revenue by region", "Which authors wrote more than three books?", "List the thenar muscles"],
)
def test_simple_questions_do_not(question):
    assert not Planner().needs_plan(question)


def test_the_request_can_skip_the_check():
    context = AgentContext(extra={"_skip_complexity": True})
    assert not Planner().needs_plan("Find the top region, then its products", context)


async def test_plan_from_the_model_is_parsed_and_validated():
    model = ScriptedModel(["Here is the plan:\n```json\n" + json.dumps(GOOD) + "\n```"])
    tracker = RecordingTracker()
    plan = await Planner(model).plan("top region, then its best product", AgentContext(tracker=tracker))
    assert plan == ExecutionPlan.from_json(json.dumps(GOOD))
    assert [[s.stage_id for s in layer] for layer in plan.layers()] == [["top"], ["product"]]
    assert "query_database" in model.calls[0][0][0].content  # the tools are described to the model
    assert tracker.types() == ["pipeline.plan"]


async def test_invalid_plan_gets_one_repair_round_with_every_problem():
    bad = {"stages": [{"stage_id": "a", "tool": "query_db", "question": "x", "depends_on": ["zzz"]}]}
    model = ScriptedModel([json.dumps(bad), json.dumps(GOOD)])
    plan = await Planner(model).plan("q", AgentContext())
    assert [s.stage_id for s in plan.stages] == ["top", "product"]
    repair_request = model.calls[1][0][-1].content
    assert "stage 'a': unknown tool 'query_db'" in repair_request
    assert "stage 'a': depends on unknown stage 'zzz'" in repair_request
    assert model.calls[1][0][-2].content == json.dumps(bad)  # the model sees what it wrote


async def test_a_second_invalid_plan_is_a_clear_error():
    cyclic = {"stages": [{"stage_id": "a", "tool": "query_database", "question": "x", "depends_on": ["b"]},
                         {"stage_id": "b", "tool": "query_database", "question": "y", "depends_on": ["a"]}]}
    model = ScriptedModel(["I cannot plan that", json.dumps(cyclic)])
    tracker = RecordingTracker()
    with pytest.raises(PlanValidationError) as info:
        await Planner(model).plan("q", AgentContext(tracker=tracker))
    assert info.value.problems == ["the model's plan was still invalid after one repair round", "dependency cycle: a -> b -> a"]
    assert model.remaining == 0 and len(model.calls) == 2  # exactly one repair round
    assert [e.data["attempt"] for e in tracker.events] == [1, 2]


async def test_too_many_stages_is_invalid():
    many = {"stages": [{"stage_id": f"s{i}", "tool": "query_database", "question": "x"} for i in range(4)]}
    model = ScriptedModel([json.dumps(many), json.dumps(GOOD)])
    plan = await Planner(model, max_stages=3).plan("q", AgentContext())
    assert len(plan.stages) == 2
    assert "plan: has 4 stages, at most 3 allowed" in model.calls[1][0][-1].content


async def test_planner_uses_the_request_model_or_says_it_has_none():
    plan = await Planner().plan("q", AgentContext(llm_router=ScriptedModel([json.dumps(GOOD)])))
    assert plan.question == GOOD["question"]
    with pytest.raises(ConfigurationError):
        await Planner().plan("q", AgentContext())
