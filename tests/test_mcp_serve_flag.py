"""``baton serve --mcp NAME=COMMAND --mcp-allow NAME=TOOL``: an MCP server joins the served
workspace as a specialist. End to end: an MCP client asks ``baton serve``'s ``/mcp``, the
orchestrator (a scripted model) routes to the MCP specialist, whose model loop calls the
test's MCP server over stdio; the structured result comes back intact."""

from __future__ import annotations

import sqlite3

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from baton.cli import build_app
from baton.cli.mcp_specialists import mcp_specialists
from baton.cli.serving import server_app
from baton.cli.specs import with_flags
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.state.location import State
from mcp_test_servers import calls_in, finance_command, served

KEY = "bt_serve_flag_test_key"


def cli(*args):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_an_mcp_server_without_an_allowlist_is_refused_before_anything_starts(tmp_path):
    for command in ("serve", "mcp"):
        missing = cli(command, "--mcp", "oracle=python server.py")
        assert missing.exit_code == 2 and "--mcp-allow oracle=TOOL" in missing.output
        stray = cli(command, "--mcp", "oracle=python server.py", "--mcp-allow", "oracle=lookup", "--mcp-allow", "other=x")
        assert stray.exit_code == 2 and "no --mcp gives" in stray.output


def oracle_model(messages, tools):
    """Stands in for the LLM: the orchestrator routes to ``oracle``; the oracle's own loop
    (the request's model) calls ``lookup`` with the question, then replies."""
    if any(t.name == "lookup" for t in tools):
        if messages[-1].role == "tool":
            return "The oracle says 42."
        return LLMResponse(tool_calls=[tool_call("lookup", {"question": messages[-1].content})])
    return LLMResponse(tool_calls=[tool_call("oracle", {"question": messages[-1].content})])


async def test_serve_with_an_mcp_specialist_answers_through_it_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BATON_API_KEYS", f"{KEY}=database")
    monkeypatch.delenv("BATON_MODEL", raising=False)
    command, calls = finance_command(tmp_path)
    servers = mcp_specialists([f"oracle={' '.join(command[:2])} {command[2]} '{command[3]}'"], ["oracle=lookup"])
    with sqlite3.connect(tmp_path / "shop.sqlite") as db:
        db.execute("CREATE TABLE orders (id INTEGER)")
    # what `baton serve --database ... --mcp ...` builds, with a scripted model
    spec = with_flags(None, database=f"sqlite:///{tmp_path / 'shop.sqlite'}", mcp=servers).model_copy(update={"pipelines": "off"})
    app, printed = server_app([spec], FunctionModel(oracle_model), State(tmp_path / "home"))
    question = "What is the answer?"
    async with served(app, lifespan="on") as url:
        async with httpx.AsyncClient() as raw:
            agents = (await raw.get(url.replace("/mcp", "/v1/agents"), headers={"Authorization": f"Bearer {KEY}"})).json()
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=httpx2.Timeout(60.0, read=120.0))
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as mcp:
            answer = await mcp.call_tool("ask", {"question": question})
    assert [a["name"] for a in agents["agents"]] == ["database", "oracle"]
    assert not answer.is_error, answer.content
    result = answer.structured_content
    assert result["routed_to"] == "oracle" and result["mode"] == "passthrough"
    assert result["data"] == {"question": question, "answer": 42} and result["text"] == "The oracle says 42."
    assert calls_in(calls) == [{"tool": "lookup", "arguments": {"question": question}}]
    assert app.state.workspaces.get("database").closed  # and with it the MCP specialist's server process


async def test_an_mcp_server_may_not_take_a_specialists_name(tmp_path):
    from baton.cli.specs import open_spec
    from baton.errors import ConfigurationError

    servers = mcp_specialists(["pokemon_finance=python server.py"], ["pokemon_finance=lookup"])
    with pytest.raises(ConfigurationError, match="already has a specialist"):
        open_spec(with_flags(None, mcp=servers), State(tmp_path / "home"), None)
    assert not (tmp_path / "home" / "demo" / "sessions.sqlite-wal").exists()  # what it opened is closed
