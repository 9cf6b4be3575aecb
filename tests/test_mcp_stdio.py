"""``baton mcp`` over stdio, driven by the official SDK's own client: tools and resources
of the demo workspace (no model: its verified questions are answered without an LLM),
progress while a question runs, and a cancelled question that really stops."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

DEMO_QUESTION = "What was Pokemon revenue by month in 2025?"
POKEMON_2025_JANUARY = {"month": "2025-01", "revenue": 752670.22}

SLOW_WORKSPACE = '''
import asyncio, sys
from pathlib import Path
from baton.agents import AgentResult, BaseAgent, OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.mcp import serve_stdio
from baton.messages import LLMResponse
from baton.workspace import Workspace

MARKS = Path(sys.argv[1])


class Slow(BaseAgent):
    """Takes an hour unless cancelled; leaves a mark when it starts and when it is cancelled."""

    async def run(self, context, **kw):
        (MARKS / "started").touch()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            (MARKS / "cancelled").touch()
            raise
        return AgentResult(agent_name=self.name, result="finished")


def route(messages, tools):
    return LLMResponse(tool_calls=[tool_call("slow", {"question": messages[-1].content})])


async def main():
    orchestrator = OrchestratorAgent("SlowOrchestrator", model=FunctionModel(route))
    orchestrator.add_agent(Slow("slow", "Answers slowly."))
    async with Workspace("slow", orchestrator) as ws:
        await serve_stdio(ws)


asyncio.run(main())
'''


def baton_mcp(home: Path) -> StdioServerParameters:
    """``baton mcp`` on the demo, in its own BATON_HOME, with no model configured (the
    SDK passes only a safe default environment, so no BATON_MODEL from ours)."""
    return StdioServerParameters(command=str(Path(sys.executable).with_name("baton")), args=["mcp"],
                                 env={"BATON_HOME": str(home)})


async def test_baton_mcp_lists_its_tools_and_answers_a_verified_question_with_rows_progress_and_a_chart(tmp_path):
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done, total, message):
        progress.append((done, message))

    async with Client(baton_mcp(tmp_path), read_timeout_seconds=120) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        answer = await client.call_tool("ask", {"question": DEMO_QUESTION}, progress_callback=on_progress)
        followup = await client.call_tool("ask", {"question": "Show only the top 5",
                                                  "session_id": answer.structured_content["session_id"], "chart_image": False})
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        schema = json.loads((await client.read_resource("baton://workspace/schema")).contents[0].text)
        verified = await client.call_tool("list_verified_questions", {})
        specialists = await client.call_tool("list_specialists", {})
        unsafe = await client.call_tool("check_sql", {"sql": "SELECT 1; DROP TABLE monthly_revenue"})
        safe = await client.call_tool("check_sql", {"sql": "SELECT month FROM monthly_revenue"})
        memory = await client.call_tool("search_memory", {"query": "how is profit defined"})
    assert set(tools) == {"ask", "list_specialists", "check_sql", "search_memory", "list_verified_questions"}
    assert tools["ask"].input_schema["required"] == ["question"]

    result = answer.structured_content
    assert not answer.is_error and "error" not in result
    assert result["rows"][0] == POKEMON_2025_JANUARY and result["row_count"] == 12
    assert result["columns"] == ["month", "revenue"] and "monthly_revenue" in result["sql"]
    assert result["fast_path"] == "verified_question" and result["llm_calls"] == 0
    assert result["staleness_warning"] is None and result["partial"] is False  # the demo sets no freshness limit
    assert result["chart"]["$schema"].startswith("https://vega.github.io/schema/vega-lite/v5")
    assert [b.type for b in answer.content] == ["text", "image"] and answer.content[1].mime_type == "image/png"
    steps = [message for _, message in progress]
    assert [n for n, _ in progress] == sorted(n for n, _ in progress) and len(progress) >= 5
    assert "agent.start: pokemon_finance" in steps and not any(s.startswith("llm.token") for s in steps)

    assert followup.structured_content["mode"] == "top_n" and followup.structured_content["row_count"] == 5
    assert [b.type for b in followup.content] == ["text"]  # chart_image=False: no PNG

    assert resources == {"baton://workspace/schema", "baton://workspace/verified-questions"}
    assert "monthly_revenue" in {t["name"] for t in schema["connections"][0]["tables"]}
    assert DEMO_QUESTION in {v["question"] for v in verified.structured_content["verified_questions"]}
    assert "pokemon_finance" in {s["name"] for s in specialists.structured_content["specialists"]}
    assert unsafe.structured_content["safe"] is False and unsafe.structured_content["rule"] == "multiple_statements"
    assert unsafe.structured_content["dialect"] == "sqlite" and unsafe.structured_content["allowed_schemas"] == ["main"]
    assert safe.structured_content["safe"] is True
    assert any(r["kind"] == "doctrine" for r in memory.structured_content["records"])


async def test_bad_input_over_stdio_gets_typed_errors_and_answers_nothing(tmp_path):
    async with Client(baton_mcp(tmp_path), read_timeout_seconds=120) as client:
        empty = await client.call_tool("ask", {"question": "   "})
        huge = await client.call_tool("ask", {"question": "revenue " * 5000})
        unknown_session = await client.call_tool("ask", {"question": DEMO_QUESTION, "session_id": "no-such-session"})
        wrong_type = await client.call_tool("ask", {"question": ["not", "a", "string"]})
        bad_dialect = await client.call_tool("check_sql", {"sql": "SELECT 1", "connection": "elsewhere"})
        empty_search = await client.call_tool("search_memory", {"query": ""})
        huge_sql = await client.call_tool("check_sql", {"sql": "SELECT " + "1 + " * 40_000 + "1"})
        greedy = await client.call_tool("search_memory", {"query": "revenue", "limit": 10**9})
    assert empty.is_error and empty.structured_content["error"]["type"] == "InvalidQuestion"
    assert huge.is_error and huge.structured_content["error"]["type"] == "InvalidQuestion"
    assert unknown_session.is_error and unknown_session.structured_content["error"]["type"] == "SessionNotFound"
    assert wrong_type.is_error  # the SDK's argument validation
    assert bad_dialect.is_error and bad_dialect.structured_content["error"]["type"] == "UnknownConnection"
    assert empty_search.is_error and empty_search.structured_content["error"]["type"] == "InvalidQuery"
    assert huge_sql.is_error and huge_sql.structured_content["error"]["type"] == "InvalidSQL"
    assert not greedy.is_error and 0 < len(greedy.structured_content["records"]) <= 100  # the limit is capped
    from baton.state import SessionStore

    store = SessionStore(tmp_path / "demo" / "sessions.sqlite")
    try:
        assert await store.list("demo") == []  # none of these asked anything
    finally:
        store.close()


async def test_a_cancelled_question_stops(tmp_path):
    script = tmp_path / "slow_workspace.py"
    script.write_text(SLOW_WORKSPACE)
    marks = tmp_path / "marks"
    marks.mkdir()
    params = StdioServerParameters(command=sys.executable, args=[str(script), str(marks)])
    async with Client(params, read_timeout_seconds=60) as client:
        started = asyncio.Event()

        async def on_progress(done, total, message):
            if message == "agent.start: slow":
                started.set()

        call = asyncio.ensure_future(client.call_tool("ask", {"question": "take your time"}, progress_callback=on_progress))
        await asyncio.wait_for(started.wait(), 30)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        for _ in range(300):  # the server gets the cancellation and stops the question
            if (marks / "cancelled").exists():
                break
            await asyncio.sleep(0.05)
        still_serving = await client.call_tool("list_specialists", {})
    assert (marks / "started").exists() and (marks / "cancelled").exists()
    assert still_serving.structured_content["specialists"][0]["name"] == "slow"
