"""A Workspace owns what it opens and releases all of it: connections, memory, knowledge
index, sessions, the chart renderer's processes, pipelines. And the layer stays below the
surfaces: nothing in ``baton.workspace`` imports the server or the CLI."""

import os
import subprocess
import sys
import threading

import pytest

from baton.llm import FunctionModel
from baton.state.location import State
from baton.workspace.database import open_database_workspace
from workspace_doubles import routed, sales_db

model = routed("North sells more.")


@pytest.fixture
def shop(tmp_path):
    db = tmp_path / "shop.sqlite"
    sales_db(db, [("north", 10.0), ("south", 4.5)])
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rules.md").write_text("# Regions\n\nThe north region includes the islands.\n")
    return db, docs, State.from_env({}, home=tmp_path / "home")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def own_threads() -> list[str]:
    """Threads but the event loop's default executor (``asyncio_N``: the loop's, bounded,
    reused by every ``to_thread`` call of any workspace)."""
    return [t.name for t in threading.enumerate() if not t.name.startswith("asyncio_")]


def children() -> set[int]:
    """Live child processes of this process (zombies included: they are not reaped)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.add(int(entry))
    return found


async def use_once(db, docs, state, *, render: bool) -> None:
    async with open_database_workspace(f"sqlite:///{db}", FunctionModel(model), docs=docs, state=state) as ws:
        answer = await ws.answer("Which region sells more?")
        assert "North sells more." in answer.content and answer.error is None
        again = await ws.answer("Show this as a bar chart", answer.session_id)
        assert again.metadata["followup"] == "rechart"
        if render:
            assert (await ws.charts.svg(again.viz_config)).lstrip().startswith("<svg")
    assert ws.closed


async def test_opening_and_closing_a_workspace_50_times_leaks_nothing(shop):
    db, docs, state = shop
    await use_once(db, docs, state, render=True)  # imports, caches and the loop's own thread pool warm up
    baseline = (open_fds(), own_threads(), children())
    for i in range(49):
        await use_once(db, docs, state, render=i % 10 == 0)
    after = (open_fds(), own_threads(), children())
    assert after[0] <= baseline[0], f"file descriptors: {baseline[0]} -> {after[0]}"
    assert len(after[1]) <= len(baseline[1]), f"threads: {baseline[1]} -> {after[1]}"
    assert after[2] <= baseline[2], f"child processes left: {after[2] - baseline[2]}"  # (earlier tests' may live on)


async def test_closing_twice_is_harmless_and_a_closed_workspace_keeps_its_conversations(shop):
    db, docs, state = shop
    ws = open_database_workspace(f"sqlite:///{db}", FunctionModel(model), state=state)
    first = await ws.answer("Which region sells more?")
    await ws.aclose()
    await ws.aclose()
    async with open_database_workspace(f"sqlite:///{db}", FunctionModel(model), state=state) as reopened:
        turns = await reopened.sessions.turns(reopened.name, first.session_id)
    assert [t.question for t in turns] == ["Which region sells more?"]


def test_the_workspace_layer_imports_no_surface():
    code = (
        "import sys, baton.workspace, baton.workspace.database, baton.workspace.answer, baton.state.location\n"
        "print([m for m in sys.modules if m.startswith(('baton.server', 'baton.cli', 'baton.demo', 'baton.mcp', 'fastapi'))])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_cli_answers_without_importing_the_server(tmp_path):
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from baton.cli import build_app\n"
        "from baton.demo.data import build_demo_database\n"
        f"build_demo_database({str(tmp_path / 'demo' / 'finance.sqlite')!r}, sales_rows=300)\n"
        "result = CliRunner().invoke(build_app(), ['ask', 'What was Epson revenue by month in 2025?'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print([m for m in sys.modules if m.startswith(('baton.server', 'fastapi', 'uvicorn'))])\n"
    )
    env = {**os.environ, "BATON_HOME": str(tmp_path), "BATON_MODEL": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
