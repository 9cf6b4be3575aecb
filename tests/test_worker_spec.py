"""``baton worker --config baton.yaml`` builds the workspace ``baton serve`` builds from the same
file: a pipeline stage run on the worker answers with the spec's semantic model and its MCP
specialists. (Before the one assembly, a worker read only ``--database`` and ``--docs``:
its stages ran without either.)"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from baton.agents import AgentContext
from baton.cli.main_commands import _state
from baton.cli.serving import open_workspace
from baton.cli.specs import cli_spec
from baton.cli.worker import worker_workspace
from baton.demo.data import build_demo_database
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.pipeline import QUERY_DATABASE
from baton.pipeline.models import PlanStage
from baton.semantic.loading import demo_model_path
from mcp_test_servers import calls_in, finance_command

PROJECT = """
workspaces:
  finance:
    database: {{url: "sqlite:///{database}"}}
    semantic: {semantic}
    mcp:
      - {{name: oracle, server: {server}, allow: [lookup]}}
"""


def project(tmp_path: Path) -> tuple[Path, Path]:
    database = build_demo_database(tmp_path / "finance.sqlite")
    command, calls = finance_command(tmp_path)
    path = tmp_path / "baton.yaml"
    path.write_text(PROJECT.format(database=database, semantic=demo_model_path(), server=json.dumps(shlex.join(command))))
    return path, calls


def scripted(offered: list[set[str]]) -> FunctionModel:
    """Routes "oracle" questions to the MCP specialist (whose loop calls ``lookup``), others to
    the SQL specialist; records the tools each specialist's loop is offered."""

    def reply(messages, tools):
        names = {t.name for t in tools or ()}
        last = messages[-1]
        if "lookup" in names:
            offered.append(names)
            return "The oracle says 42." if last.role == "tool" else LLMResponse(tool_calls=[tool_call("lookup", {"question": last.content})])
        if "oracle" in names:  # the orchestrator
            if last.role == "tool":
                return last.content
            return LLMResponse(tool_calls=[tool_call("oracle" if "oracle" in last.content.lower() else "database",
                                                     {"question": last.content})])
        offered.append(names)  # the SQL specialist
        return "No query needed."

    return FunctionModel(reply)


async def test_a_worker_runs_stages_with_the_specs_semantic_model_and_mcp_specialists(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_STATE_URL", raising=False)
    path, calls = project(tmp_path)
    offered: list[set[str]] = []
    spec = cli_spec(path, "finance")
    ws, _ = worker_workspace(spec, scripted(offered), {"executor_id": "test-worker"})
    async with ws:
        host = ws.pipelines.host
        assert host.run_stages and ws.name in host.runners
        runner = host.runners[ws.name]
        context = AgentContext(workspace=ws.name)
        oracle = await runner.run(PlanStage("s1", QUERY_DATABASE, "Ask the oracle for the answer"), {}, context)
        assert oracle.ok, oracle
        assert oracle.message is not None and oracle.message.metadata.get("routed_to") == "oracle", oracle
        assert calls_in(calls) == [{"tool": "lookup", "arguments": {"question": "Ask the oracle for the answer"}}]
        metric = await runner.run(PlanStage("s2", QUERY_DATABASE, "How many tickets were sold in Paris?"), {}, context)
        assert metric.ok, metric
    assert any("semantic_query" in names for names in offered)  # the SQL specialist answered with the semantic model


async def test_serve_and_worker_assemble_equal_workspaces_from_one_file(tmp_path, monkeypatch):
    """Equal file and flags: equal spec, equal specialists, for the server and the worker."""
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_STATE_URL", raising=False)
    path, _ = project(tmp_path)
    spec = cli_spec(path, "finance")
    model = scripted([])
    served = open_workspace(spec, model, _state(None))
    worker, _ = worker_workspace(cli_spec(path, "finance"), model, {"executor_id": "test-worker-2"})
    try:  # not started: one process runs one pipeline engine (DBOS), and neither needs it here
        assert described(served) == described(worker)
        assert {"database", "oracle", "metrics"} & {s["name"] for s in served.catalog.listing()} == {"database", "oracle"}
        assert served.catalog.semantic is not None
    finally:
        await served.aclose()
        await worker.aclose()


def described(ws) -> tuple:
    """What a workspace answers with, as its catalog says."""
    catalog = ws.catalog
    return (catalog.listing(), [c.url for c in catalog.databases()], catalog.semantic is not None,
            [v.question for v in catalog.verified_questions], list(catalog.document_examples))
