"""Start-up refusals at the CLI's edge: each is one line on stderr (what is wrong, what to do),
exit 2, never a traceback; exit 1 stays "a check found a problem" (``baton.cli.refusals``)."""

from __future__ import annotations

import sqlite3
import subprocess

import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.cli.refusals import guarded
from baton.demo.data import build_demo_database
from baton.errors import StartupRefusal
from baton_processes import BATON
from live_server import free_port


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path))
    for name in ("BATON_MODEL", "BATON_API_KEYS", "BATON_STATE_URL", "BATON_EVENTS_URL", "BATON_DEMO_KEY"):
        monkeypatch.delenv(name, raising=False)
    build_demo_database(tmp_path / "demo" / "finance.sqlite", sales_rows=200)
    return tmp_path


def refused(result) -> str:
    """The refusal line, after checking the shape every refusal has."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("baton: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def run(*args: str, **env: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200", **env})


def test_api_keys_naming_a_workspace_the_server_does_not_serve(home):
    line = refused(run("serve", "--port", str(free_port()), BATON_API_KEYS="k-1=demo,k-2=nowhere"))
    assert "nowhere" in line and "BATON_API_KEYS" in line and "demo" in line and "k-1" not in line


@pytest.mark.parametrize("keys", ["k-1:demo", "k-1=", "k-1=demo,k-2"])
def test_an_api_key_entry_naming_no_workspace_says_how_to_write_one(home, keys):
    line = refused(run("serve", "--port", str(free_port()), BATON_API_KEYS=keys))
    assert "names no workspace" in line and "key=workspace" in line and "k-1" not in line


def test_api_keys_naming_an_unknown_workspace_with_several_workers_refuse_before_any_worker(home):
    line = refused(run("serve", "--workers", "2", "--port", str(free_port()), BATON_API_KEYS="k=nowhere"))
    assert "nowhere" in line


def test_state_written_by_a_newer_baton(home):
    assert run("keys", "create", "--workspace", "demo").exit_code == 0
    with sqlite3.connect(home / "state.sqlite") as conn:
        conn.execute("UPDATE baton_schema_versions SET version = 99 WHERE component = 'keys'")
    for args in (("keys", "list"), ("serve", "--port", str(free_port()))):
        line = refused(run(*args))
        assert "schema version 99" in line and "upgrade Baton" in line


def test_an_event_bus_that_does_not_answer_at_start(home, postgres_url):
    closed = free_port()
    line = refused(run("worker", "--state", postgres_url, BATON_MODEL="openai:gpt-4o-mini", OPENAI_API_KEY="sk-test",
                       BATON_EVENTS_URL=f"redis://127.0.0.1:{closed}/0"))
    assert "BATON_EVENTS_URL" in line and "Start it" in line


@pytest.mark.parametrize("args", [
    ("serve", "--state", "bogus://somewhere"),
    ("ask", "anything", "--state", "mysql://root@127.0.0.1/test"),
    ("ask", "anything", "--docs", "/nonexistent/baton-docs"),
])
def test_a_configuration_error_in_general(home, args):
    line = refused(run(*args))
    assert len(line) < 400


def test_a_real_process_prints_one_line_and_exits_2(home):
    """The installed ``baton`` entry point, as an operator runs it."""
    env = {"BATON_HOME": str(home), "BATON_API_KEYS": "k=nowhere", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(BATON), "serve", "--port", str(free_port())], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()  # notices first (no model configured), the refusal last
    assert lines[-1].startswith("baton: ") and "nowhere" in lines[-1], done.stderr
    assert sum(line.startswith("baton: ") for line in lines) == 1


def test_a_refusal_raised_anywhere_in_a_command_is_handled_by_the_one_edge():
    """Later issues add cases by raising ``StartupRefusal``: nothing at the edge changes."""
    import typer

    app = typer.Typer()

    @app.command()
    def start(name: str = typer.Option("x")) -> None:
        raise StartupRefusal(f"cannot start {name}", "do this instead")

    @app.command()
    def other() -> None:
        raise typer.Exit(1)  # a check that found a problem: untouched

    from baton.cli.refusals import guard_commands

    guard_commands(app)
    result = CliRunner().invoke(app, ["start", "--name", "y"])
    assert result.exit_code == 2 and result.stderr == "baton: cannot start y: do this instead\n"
    assert CliRunner().invoke(app, ["other"]).exit_code == 1
    assert guarded(lambda: 3)() == 3


def test_serve_with_several_workers_refuses_an_event_bus_that_does_not_answer_before_any_worker(home, postgres_url):
    line = refused(run("serve", "--workers", "2", "--port", str(free_port()), "--state", postgres_url, BATON_MODEL="openai:gpt-4o-mini",
                       OPENAI_API_KEY="sk-test", BATON_EVENTS_URL=f"redis://127.0.0.1:{free_port()}/0"))
    assert "BATON_EVENTS_URL" in line
