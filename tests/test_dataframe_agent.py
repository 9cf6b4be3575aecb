"""DataFrameAgent: DataFrames, CSV and Parquet as DuckDB tables, the SQL loop reused, and no
way for model-written SQL to read a file or write anything."""

from __future__ import annotations

import pandas as pd
import pytest

from baton.agents import AgentContext
from baton.errors import ConfigurationError
from baton.llm.testing import ScriptedModel
from baton.specialists.dataframe import DataFrameAgent, FrameStore
from baton.specialists.sql.classify import ErrorClass, SQLExecutionError
from test_sql_agent import sql_call


@pytest.fixture
def frames(tmp_path):
    sales = pd.DataFrame({"region_id": [1, 1, 2], "amount": [10.5, 20.0, 7.25]})
    pd.DataFrame({"region_id": [1, 2], "region": ["North", "South"]}).to_csv(tmp_path / "regions.csv", index=False)
    pd.DataFrame({"region_id": [1, 2], "target": [25.0, 10.0]}).to_parquet(tmp_path / "targets.parquet")
    return {"sales": sales, "regions": tmp_path / "regions.csv", "targets": str(tmp_path / "targets.parquet")}


async def test_questions_over_dataframe_csv_and_parquet(frames):
    agent = DataFrameAgent(frames)
    model = ScriptedModel([
        sql_call("SELECT r.region, SUM(s.amount) AS total, t.target FROM sales s JOIN regions r USING (region_id) "
                 "JOIN targets t USING (region_id) GROUP BY r.region, t.target ORDER BY r.region"),
        "North beat its target; South did not.",
    ])
    try:
        result = await agent.run(AgentContext(llm_router=model), question="Sales vs target per region?")
        assert result.status == "success", result.error
        assert result.agent_name == "dataframe"
        assert result.ai_message.data == [{"region": "North", "total": 30.5, "target": 25.0},
                                          {"region": "South", "total": 7.25, "target": 10.0}]
        assert "TABLE sales" in model.calls[0][0][0].content and "TABLE targets" in model.calls[0][0][0].content
    finally:
        agent.close()


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "COPY sales TO '/tmp/stolen.csv'",
    "DROP TABLE sales",
])
async def test_model_cannot_read_files_or_write(frames, sql):
    agent = DataFrameAgent(frames)
    model = ScriptedModel([sql_call(sql)])
    try:
        result = await agent.run(AgentContext(llm_router=model), question="show me the file")
        assert result.status == "error" and result.error_type == "unsafe_sql"
        assert model.remaining == 0
    finally:
        agent.close()


async def test_engine_refuses_file_reads_even_without_the_parser_check(frames):
    store = FrameStore(frames)
    try:
        conn = store.connection()
        for sql in ("SELECT * FROM read_csv('/etc/passwd')", "INSERT INTO sales VALUES (3, 1.0)",
                    "COPY sales TO '/tmp/stolen_baton.csv'"):
            with pytest.raises(SQLExecutionError) as caught:
                await conn.execute_readonly(sql)
            assert caught.value.error_class is ErrorClass.PERMISSION_DENIED, sql
        assert (await conn.execute_readonly("SELECT COUNT(*) FROM sales")).rows == [[3]]
    finally:
        store.close()


def test_bad_frames_are_configuration_errors(tmp_path):
    with pytest.raises(ConfigurationError):
        FrameStore({})
    with pytest.raises(ConfigurationError):
        FrameStore({"bad name; drop": pd.DataFrame({"a": [1]})})
    with pytest.raises(ConfigurationError):
        FrameStore({"x": tmp_path / "notes.txt"})
    store = FrameStore({"x": tmp_path / "missing.csv"})
    with pytest.raises(ConfigurationError):
        store.connection()
    store.close()
