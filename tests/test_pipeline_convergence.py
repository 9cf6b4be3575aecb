"""The convergence check on its own, and durable configuration checks (no DBOS needed)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from baton.pipeline import PipelineConfigurationError, PlanStage, StageResult
from baton.pipeline.convergence import convergence_problems
from baton.pipeline.durable import DurableConfig, load_runner_factory
from baton.response import QueryResult


def result(sid: str, columns, rows, types=(), **kw) -> StageResult:
    return StageResult(sid, query_result=QueryResult(columns=list(columns), rows=[list(r) for r in rows], column_types=list(types)), **kw)


def consumer(*deps: str, **kw) -> PlanStage:
    return PlanStage("c", "analyze_results", "combine", depends_on=list(deps), **kw)


def test_engine_types_of_one_family_are_compatible():
    inputs = {
        "a": result("a", ["id", "amount"], [(1, 2)], ["INTEGER", "NUMERIC(10,2)"]),
        "b": result("b", ["ID", "amount"], [(1, 3.5)], ["BIGINT", "double precision"]),
    }
    assert convergence_problems(consumer("a", "b", join_on=["id"]), inputs) == []


def test_values_decide_when_the_engine_reports_no_type():
    inputs = {
        "a": result("a", ["day", "n"], [(dt.date(2024, 1, 1), Decimal("1.5"))]),
        "b": result("b", ["day", "n"], [("2024-01-01", 2)]),
    }
    assert convergence_problems(consumer("a", "b"), inputs) == [
        "stage 'c': join column 'day' has incompatible types: temporal in 'a', text in 'b'"
    ]


def test_all_null_columns_and_text_results_take_no_part():
    inputs = {
        "a": result("a", ["region"], [(None,)]),
        "b": result("b", ["region"], [(7,)]),
        "docs": StageResult("docs", answer="some text"),
        "failed": StageResult("failed", status="error", error="x"),
    }
    assert convergence_problems(consumer("a", "b", "docs"), inputs) == []
    assert convergence_problems(consumer("a", "docs"), {k: inputs[k] for k in ("a", "docs")}) == []


def test_unrelated_tables_pass_unless_the_plan_names_columns():
    inputs = {"a": result("a", ["users"], [(3,)]), "b": result("b", ["orders"], [(9,)])}
    assert convergence_problems(consumer("a", "b"), inputs) == []
    assert convergence_problems(consumer("a", "b", compare=["users"]), inputs) == [
        "stage 'c': compared measure 'users' is missing from stage 'b''s result (it has: orders)"
    ]


def test_units_from_the_result_win_over_the_shared_mapping():
    inputs = {
        "a": result("a", ["revenue"], [(100,)], units={"revenue": "cents"}),
        "b": result("b", ["revenue"], [(1,)]),
    }
    assert convergence_problems(consumer("a", "b"), inputs, units={"revenue": "cents"}) == []
    assert convergence_problems(consumer("a", "b"), inputs, units={"b.revenue": "dollars", "revenue": "cents"}) == [
        "stage 'c': compared measure 'revenue' is in different units: 'cents' in 'a', 'dollars' in 'b'"
    ]


def test_durable_config_is_checked():
    with pytest.raises(PipelineConfigurationError, match="SQLite or PostgreSQL"):
        DurableConfig(system_database_url="mysql://x/y")
    with pytest.raises(PipelineConfigurationError, match="lapse_s must be longer"):
        DurableConfig(heartbeat_interval_s=5, heartbeat_lapse_s=5)
    assert DurableConfig(system_database_url="postgresql://u@h/db").sqlalchemy_url().startswith("postgresql+psycopg://")
    env = {"BATON_PIPELINE_DATABASE_URL": "postgresql://u@h/db", "BATON_PIPELINE_QUEUE": "q2"}
    config = DurableConfig.from_env(env, executor_id="w1")
    assert (config.system_database_url, config.queue_name, config.executor_id) == ("postgresql://u@h/db", "q2", "w1")
    assert DurableConfig().with_executor_id().executor_id != DurableConfig().with_executor_id().executor_id


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "must look like 'package.module:function'"),
        ("baton_missing_module_xyz:f", "cannot import runner factory module"),
        ("baton.pipeline:NOPE", "is not a callable"),
        ("builtins:dict", "returned dict, which has no async run"),
    ],
)
def test_bad_runner_factories_are_clear_errors(spec, message):
    with pytest.raises(PipelineConfigurationError, match=message):
        load_runner_factory(spec)


def test_runner_factory_builds_the_runner(monkeypatch, tmp_path):
    monkeypatch.setenv("BATON_TEST_PIPELINE_DIR", str(tmp_path))
    runner = load_runner_factory("pipeline_doubles:make_recording_runner")
    assert runner.directory == tmp_path
