"""The stage tools with the real specialists: query_database runs the SQL specialist on a
real SQLite database; analyze_results runs the DataFrame specialist over the results of the
stage's dependencies, registered as tables named by stage id."""

import json
import sqlite3

import pytest

from baton.agents import AgentContext
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.pipeline import AgentStageRunner, ExecutionPlan, PipelineExecutor
from baton.specialists.dataframe import DataFrameAgent
from baton.specialists.sql import SQLAgent, SQLConnection

PLAN = {
    "question": "Revenue and costs per region, then margin",
    "stages": [
        {"stage_id": "revenue", "description": "", "tool": "query_database", "question": "revenue per region", "depends_on": []},
        {"stage_id": "costs", "description": "", "tool": "query_database", "question": "costs per region", "depends_on": []},
        {"stage_id": "margin", "description": "", "tool": "analyze_results", "question": "margin per region",
         "depends_on": ["revenue", "costs"]},
    ],
}
SQL = {
    "revenue per region": "SELECT region, SUM(amount) AS revenue FROM sales GROUP BY region",
    "costs per region": "SELECT region, SUM(cost) AS cost FROM costs GROUP BY region",
    "margin per region": "SELECT r.region, r.revenue - c.cost AS margin FROM revenue r JOIN costs c USING (region) ORDER BY margin DESC",
}


def writer(messages, tools):
    if messages[-1].role == "tool":
        return "done"
    question = next(m.content for m in messages if m.role == "user")
    return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": SQL[question]})])


@pytest.fixture
async def connection(tmp_path):
    path = tmp_path / "co.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sales (region TEXT, amount REAL)")
        db.execute("CREATE TABLE costs (region TEXT, cost REAL)")
        db.executemany("INSERT INTO sales VALUES (?, ?)", [("north", 100), ("north", 50), ("south", 80)])
        db.executemany("INSERT INTO costs VALUES (?, ?)", [("north", 60), ("south", 70)])
    conn = SQLConnection(f"sqlite:///{path}")
    yield conn
    await conn.aclose()


async def test_analyze_results_reads_its_dependencies_as_tables_named_by_stage_id(connection):
    model = FunctionModel(writer)
    runner = AgentStageRunner({
        "query_database": SQLAgent(connection, name="sql", model=model, answer_with_model=False),
        "analyze_results": DataFrameAgent(name="analysis", model=model, answer_with_model=False),
    })
    run = await PipelineExecutor(runner).start(ExecutionPlan.from_json(json.dumps(PLAN)), AgentContext())
    assert run.message.response_type == "pipeline_complete"
    margin = run.results["margin"]
    assert margin.ok and margin.query_result.records() == [{"region": "north", "margin": 90.0}, {"region": "south", "margin": 10.0}]


async def test_a_dataframe_agent_without_tables_is_a_typed_failure():
    from baton.errors import AgentFatalError

    with pytest.raises(AgentFatalError, match="has no tables"):
        await DataFrameAgent(model=FunctionModel(writer)).run(AgentContext(), question="x")
