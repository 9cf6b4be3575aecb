"""DataFrameAgent: DataFrames, CSV and Parquet as DuckDB tables, the SQL loop reused, and no
way for model-written SQL to read a file or write anything."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from baton.agents import AgentContext
from baton.errors import ConfigurationError
from baton.llm.testing import FunctionModel, ScriptedModel
from baton.specialists.dataframe import DataFrameAgent, FrameStore, FrameStoreClosedError
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


async def test_concurrent_first_requests_share_one_sql_agent(frames):
    agent = DataFrameAgent(frames)
    try:
        first, second = await asyncio.gather(agent.sql_agent(), agent.sql_agent())
        assert first is second
        models = [ScriptedModel([sql_call("SELECT SUM(amount) AS total FROM sales"), "done"]) for _ in range(2)]
        results = await asyncio.gather(*(agent.run(AgentContext(llm_router=m), question="total?") for m in models))
        assert [r.ai_message.data for r in results] == [[{"total": 37.75}]] * 2
        assert await agent.sql_agent() is first  # still the same copy, still the same agent
    finally:
        agent.close()


def _copy_directory(agent: DataFrameAgent) -> Path:
    return Path(agent.store.connection().url.database).parent


@pytest.mark.parametrize("action", ["refresh", "close"])
async def test_refresh_or_close_during_a_request_lets_it_finish_on_its_copy(frames, action):
    """The model calls refresh()/close() between the request's start and its query: the
    query still runs on the copy the request started with, which is deleted afterwards."""
    agent = DataFrameAgent(frames)
    old_copy = _copy_directory(agent)

    def model_fn(messages, tools):
        if len(messages) <= 2:  # the first call: pull the rug, then ask for a query
            frames["sales"]["amount"] = [1000.0, 0.0, 0.0]  # the operator's DataFrame changes in place
            getattr(agent, action)()
            return sql_call("SELECT SUM(amount) AS total FROM sales")
        return "done"

    try:
        result = await agent.run(AgentContext(llm_router=FunctionModel(model_fn)), question="total?")
        assert result.status == "success", result.error
        assert result.ai_message.data == [{"total": 37.75}]  # the data the request started with
        assert not old_copy.exists()  # deleted once the request ended
        after = ScriptedModel([sql_call("SELECT SUM(amount) AS total FROM sales"), "done"])
        if action == "refresh":
            fresh = await agent.run(AgentContext(llm_router=after), question="total?")
            assert fresh.ai_message.data == [{"total": 1000.0}]  # the new copy reads the changed frame
        else:
            with pytest.raises(FrameStoreClosedError):
                await agent.run(AgentContext(llm_router=after), question="total?")
    finally:
        agent.close()


def test_refresh_with_no_request_running_deletes_the_copy_at_once(frames):
    store = FrameStore(frames)
    first = Path(store.connection().url.database).parent
    store.refresh()
    assert not first.exists()
    second = Path(store.connection().url.database).parent
    assert second != first and second.exists()
    store.close()
    assert not second.exists()
    with pytest.raises(FrameStoreClosedError):
        store.connection()


def test_a_copy_that_fails_to_build_leaves_no_directory(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where mkdtemp puts the copy
    store = FrameStore({"ok": pd.DataFrame({"a": [1]}), "gone": tmp_path / "missing.csv"})
    with pytest.raises(ConfigurationError):
        store.connection()
    assert list(scratch.iterdir()) == []
    store.close()
