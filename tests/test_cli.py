"""The top-level commands on the demo workspace, with no model configured."""

import re

import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.demo.data import build_demo_database


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path))
    monkeypatch.delenv("BATON_MODEL", raising=False)
    build_demo_database(tmp_path / "demo" / "finance.sqlite", sales_rows=500)
    return tmp_path


def run(*args):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_ask_prints_the_table_and_sql_and_writes_the_chart(home):
    chart = home / "chart.svg"
    result = run("ask", "What was Epson revenue by month in 2025?", "--chart", str(chart))
    assert result.exit_code == 0, result.output
    assert "2025-12" in result.output and "monthly_revenue" in result.output and "no LLM call" in result.output
    assert chart.read_text().lstrip().startswith("<svg")


def test_ask_without_a_model_says_how_to_set_one(home):
    result = run("ask", "Write a poem about spring")
    assert "BATON_MODEL" in result.output


def test_a_malformed_model_string_is_a_clear_error(home, monkeypatch):
    monkeypatch.setenv("BATON_MODEL", "nonsense")
    result = run("ask", "anything")
    assert result.exit_code == 2 and "Model configuration error" in result.output


def test_sessions_lists_and_prints_conversations(home):
    run("ask", "What was Epson revenue by month in 2025?")
    listed = run("sessions")
    assert listed.exit_code == 0 and "What was Epson revenue" in listed.output
    session_id = re.search(r"\b[0-9a-f]{32}\b", listed.output).group(0)
    shown = run("sessions", session_id)
    assert shown.exit_code == 0 and "2025-12" in shown.output


def test_agents_lists_the_four_specialists(home):
    result = run("agents")
    assert result.exit_code == 0
    for name in ("pokemon_finance", "epson_finance", "roadshows_finance", "general_finance"):
        assert name in result.output


def test_memory_commands_default_to_the_demos_journal(home):
    run("ask", "What was Epson revenue by month in 2025?")  # builds the demo and its memory
    listed = run("memory", "list", "--kind", "benchmark")
    assert listed.exit_code == 0, listed.output
    assert "Epson revenue by month" in listed.output
    assert run("memory", "verify").exit_code == 0


def test_your_own_database_with_documents_keeps_its_conversation_and_memory(home, tmp_path, monkeypatch):
    import sqlite3

    from baton.llm import FunctionModel, tool_call
    from baton.messages import LLMResponse

    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE sales (region TEXT, amount REAL)")
        conn.executemany("INSERT INTO sales VALUES (?, ?)", [("north", 10.0), ("south", 4.5)])
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rules.md").write_text("# Regions\n\nThe north region includes the islands.\n")

    def model(messages, tools):
        if any(t.name == "run_sql" for t in tools):
            if messages[-1].role == "tool":
                return "North sells more."
            return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"})])
        if messages[-1].role == "tool":
            return messages[-1].content
        return LLMResponse(tool_calls=[tool_call("database", {"question": messages[-1].content})])

    monkeypatch.setattr("baton.cli.main_commands._model", lambda: FunctionModel(model))
    result = run("ask", "--database", f"sqlite:///{db}", "--docs", str(docs), "Which region sells more?")
    assert result.exit_code == 0, result.output
    assert "North sells more." in result.output and "north" in result.output
    workspace_dirs = list((home / "workspaces").iterdir())
    assert len(workspace_dirs) == 1 and str(db) not in workspace_dirs[0].name
    assert (workspace_dirs[0] / "sessions.sqlite").exists()

    from baton.memory import MemoryStore, Principal, TrustedAuthenticator

    store = MemoryStore(f"sqlite:///{workspace_dirs[0] / 'memory.sqlite'}", authenticator=TrustedAuthenticator())
    doctrine = store.list_records(store.open(Principal("database")), kind="doctrine")
    assert any("islands" in r.text for r in doctrine)
    store.close()


def test_serve_with_a_database_serves_only_that_workspace(tmp_path, monkeypatch):
    import sqlite3

    from baton.cli.serving import server_app
    from baton.cli.specs import with_flags
    from baton.state.location import State

    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_API_KEYS", raising=False)
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE sales (region TEXT, amount REAL)")

    app, printed = server_app([with_flags(None, database=f"sqlite:///{db}")], None, State(tmp_path / "home"))
    assert [name for _, name in printed] == ["database"]
    assert app.state.workspaces.names() == {"database"}
    assert not (tmp_path / "home" / "demo").exists()


async def test_the_demo_keeps_its_key_across_restarts(home, monkeypatch):
    import httpx

    from baton.cli.serving import demo_app
    from baton.demo.workspace import build_demo_workspace
    from baton.state.location import State

    monkeypatch.delenv("BATON_DEMO_KEY", raising=False)
    state = State.from_env({}, home=home)
    keys = []
    for _ in range(2):  # two starts of `baton demo`
        async with build_demo_workspace(home / "demo", state_url=state.url) as ws:
            app, key = demo_app(ws, state)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://demo") as client:
                assert (await client.get("/v1/agents", headers={"X-API-Key": key})).status_code == 200
                assert (await client.get("/v1/agents", headers={"X-API-Key": key + "x"})).status_code == 401
            app.state.keys.close()
        keys.append(key)
    assert keys[0] == keys[1]
