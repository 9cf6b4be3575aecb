"""Plan models: strict JSON, layering by Kahn's algorithm, cycles, results round-trip."""

from __future__ import annotations

import json

import pytest

from baton.pipeline import ExecutionPlan, PlanDefect, PlanStage, PlanValidationError, StageResult, StageValidation
from baton.response import AIMessage, QueryResult


def stage(sid: str, *deps: str, tool: str = "query_database", **kw) -> dict:
    return {"stage_id": sid, "tool": tool, "question": f"question {sid}", "depends_on": list(deps), **kw}


def plan_json(*stages: dict, **extra) -> str:
    return json.dumps({"question": "q", "stages": list(stages), **extra})


def ids(layers) -> list[list[str]]:
    return [[s.stage_id for s in layer] for layer in layers]


def test_diamond_layers():
    plan = ExecutionPlan.from_json(plan_json(stage("top"), stage("left", "top"), stage("right", "top"), stage("join", "left", "right", tool="analyze_results")))
    assert ids(plan.layers()) == [["top"], ["left", "right"], ["join"]]


def test_wide_plan_is_one_layer_then_a_fan_in():
    wide = [stage(f"s{i}") for i in range(6)]
    plan = ExecutionPlan.from_json(plan_json(*wide, stage("sum", *[f"s{i}" for i in range(6)], tool="analyze_results")))
    assert ids(plan.layers()) == [[f"s{i}" for i in range(6)], ["sum"]]


def test_layers_follow_dependencies_not_list_order():
    # listed backwards: the executor must not serialise by list position
    plan = ExecutionPlan.from_json(plan_json(stage("c", "b"), stage("b", "a"), stage("x"), stage("a")))
    assert ids(plan.layers()) == [["x", "a"], ["b"], ["c"]]


def test_cycle_is_a_plan_defect_naming_its_stages():
    with pytest.raises(PlanDefect) as info:
        ExecutionPlan.from_json(plan_json(stage("ok"), stage("a", "c"), stage("b", "a"), stage("c", "b"), stage("after", "a")))
    assert info.value.cycle == ["a", "c", "b", "a"]
    assert "dependency cycle: a -> c -> b -> a" in str(info.value)


def test_cycle_in_a_plan_built_in_code():
    plan = ExecutionPlan("q", [PlanStage("a", "query_database", "x", depends_on=["b"]), PlanStage("b", "query_database", "y", depends_on=["a"])])
    with pytest.raises(PlanDefect) as info:
        plan.layers()
    assert set(info.value.cycle) == {"a", "b"}


def test_every_problem_is_listed_at_once():
    raw = plan_json(
        {"stage_id": "a", "tool": "query_database", "question": "x", "depends": ["b"]},
        {"tool": "query_database", "question": "no id"},
        stage("b", "ghost"),
        stage("b"),
        stage("c", tool="send_email"),
        {"stage_id": "d", "tool": "query_database", "question": 42, "checkpoint": "yes"},
        stage("e", validation={"min_rows": "1", "max_rows": 3, "rows": 2}),
    )
    with pytest.raises(PlanValidationError) as info:
        ExecutionPlan.from_json(raw)
    text = "\n".join(info.value.problems)
    for expected in (
        "stage 'a': unknown field 'depends'",
        "stages[1]: missing field 'stage_id'",
        "stage 'd': 'question' must be a string, got integer",
        "stage 'd': 'checkpoint' must be true or false, got string",
        "stage 'e': validation.min_rows must be an integer, got string",
        "stage 'e': unknown validation field 'rows'",
    ):
        assert expected in text
    assert info.value.raw == raw


def test_cross_stage_problems_are_listed_together():
    raw = plan_json(stage("b", "ghost"), stage("b"), stage("c", tool="send_email"), stage("z", tool="analyze_results"),
                    stage("v", validation={"min_rows": 5, "max_rows": 2}))
    with pytest.raises(PlanValidationError) as info:
        ExecutionPlan.from_json(raw)
    assert info.value.problems == [
        "stage 'b': depends on unknown stage 'ghost'",
        "stage 'b': duplicate stage_id",
        "stage 'c': unknown tool 'send_email' (known: query_database, search_codebase, analyze_results)",
        "stage 'z': analyze_results needs at least one stage in depends_on to analyze",
        "stage 'v': validation.min_rows (5) > max_rows (2)",
    ]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("not json", "plan is not valid JSON"),
        ("[1, 2]", "plan must be a JSON object, got list"),
        ('{"question": "q"}', "plan: missing field 'stages'"),
        ('{"question": "q", "stages": {}}', "plan: 'stages' must be a list, got object"),
        ('{"question": "q", "stages": []}', "plan: has no stages"),
        ('{"question": "q", "stages": [], "steps": []}', "plan: unknown field 'steps'"),
        ('{"question": "q", "stages": ["a"]}', "stages[0]: must be an object, got string"),
        ('{"stages": [{"stage_id": "a", "tool": "query_database", "question": "x", "depends_on": "b"}]}',
         "stage 'a': 'depends_on' must be a list of strings, got string"),
        ('{"stages": [{"stage_id": "a", "tool": "query_database", "question": "x", "depends_on": [1]}]}',
         "stage 'a': 'depends_on' must be a list of strings, got an item of type integer"),
        ('{"stages": [{"stage_id": "a", "tool": "query_database", "question": "x", "depends_on": ["a"]}]}',
         "stage 'a': depends on itself"),
    ],
)
def test_malformed_plans(raw, problem):
    with pytest.raises(PlanValidationError) as info:
        ExecutionPlan.from_json(raw)
    assert any(p.startswith(problem) for p in info.value.problems), info.value.problems


def test_plan_round_trips_through_json():
    plan = ExecutionPlan(
        question="q",
        stages=[
            PlanStage("a", "query_database", "x", description="d", checkpoint=True, validation=StageValidation(min_rows=1, required_columns=["region"])),
            PlanStage("b", "analyze_results", "y", depends_on=["a"], join_on=["region"], compare=["amount"]),
        ],
    )
    assert ExecutionPlan.from_json(plan.to_json()) == plan


def test_stage_result_round_trips_with_table_and_message():
    result = StageResult(
        stage_id="a", tool="query_database", query="SELECT 1", answer="one",
        query_result=QueryResult(columns=["n"], rows=[[1]], column_types=["INTEGER"]),
        units={"n": "items"}, message=AIMessage(content="one", results=QueryResult(columns=["n"], rows=[[1]])),
        started_at=1.0, finished_at=2.0, duration_ms=1000.0,
    )
    back = StageResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back.query_result == result.query_result
    assert back.message.results == result.message.results
    assert (back.units, back.query, back.duration_ms) == (result.units, result.query, result.duration_ms)


@pytest.mark.parametrize("bad_id", ["", " ", "top 5", "1st", "a-b", "x" * 65, "drop;table"])
def test_stage_ids_must_be_identifiers(bad_id):
    # the id names the stage's table in analyze_results SQL, a DBOS step and an event key
    with pytest.raises(PlanValidationError) as info:
        ExecutionPlan.from_json(plan_json(stage(bad_id)))
    assert any("'stage_id' must be an identifier" in p for p in info.value.problems), info.value.problems


def test_a_huge_plan_is_refused_before_its_stages_are_parsed():
    raw = plan_json(*[stage(f"s{i}") for i in range(65)])
    with pytest.raises(PlanValidationError) as info:
        ExecutionPlan.from_json(raw)
    assert info.value.problems == ["plan: has 65 stages, at most 64 allowed"]
    assert len(ExecutionPlan.from_json(raw, max_stages=100).stages) == 65
    with pytest.raises(PlanValidationError, match="has 3 stages, at most 2 allowed"):
        ExecutionPlan.from_json(plan_json(stage("a"), stage("b"), stage("c")), max_stages=2)


@pytest.mark.parametrize(
    ("stage_obj", "problem"),
    [
        (PlanStage("a", "query_database", None), "stage 'a': 'question' must be a string, got null"),
        (PlanStage("b", "query_database", "x", depends_on="a"), "stage 'b': 'depends_on' must be a list of strings, got string"),
        (PlanStage("c", "query_database", "x", validation=StageValidation(min_rows="1")),
         "stage 'c': validation.min_rows must be an integer, got string"),
        (PlanStage("d", "query_database", "x", validation={"min_rows": 1}), "stages[1]: 'validation' must be a StageValidation, got dict"),
        (PlanStage("e", "query_database", "x", checkpoint="yes"), "stage 'e': 'checkpoint' must be true or false, got string"),
        ({"stage_id": "f"}, "stages[1]: must be a PlanStage, got dict"),
    ],
)
def test_plans_built_in_code_get_the_same_field_checks(stage_obj, problem):
    # before: AttributeError / TypeError halfway through validation, or a string depends_on
    # read character by character
    plan = ExecutionPlan("q", [PlanStage("a0", "query_database", "x"), stage_obj])
    with pytest.raises(PlanValidationError) as info:
        plan.validate()
    assert problem in info.value.problems, info.value.problems
