"""User mistakes at the command line, tried as a user makes them: each is one line (what is
wrong, what to do), never a traceback, and the right exit status: 2 for a refusal or a usage
error (nothing ran), 1 for "a check ran and found a problem". Nothing is answered, served or
written on the way (``baton.cli.refusals``, ``baton.cli.listening``, ``baton.cli.render``).
Real files, ports and servers; no mocks."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.demo.data import build_demo_database
from baton.demo.service import DemoService
from live_server import free_port

QUESTION = "What was Pokemon revenue by month in 2025?"
NOTICE = "No model configured"  # the demo's notice on stderr, not an error line
UNREACHABLE_PG = "postgresql://postgres@127.0.0.1:1/nothing"  # nothing listens on port 1: refused at once


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path))
    for name in ("BATON_MODEL", "BATON_API_KEYS", "BATON_STATE_URL", "BATON_EVENTS_URL", "BATON_DEMO_KEY", "BATON_DEMO_SMOKE"):
        monkeypatch.delenv(name, raising=False)
    build_demo_database(tmp_path / "demo" / "finance.sqlite", sales_rows=200)
    return tmp_path


def run(*args: str, **env: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "400", **env})


def one_line(result, code: int = 2) -> str:
    """The mistake's one line, after checking the shape every mistake has."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, (AssertionError, TypeError, AttributeError))
    lines = [line for line in result.output.splitlines() if line.strip() and not line.startswith((NOTICE, "an LLM."))]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def taken_port():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


# --- serving: the port is bound before any link is printed -------------------------------


@pytest.mark.parametrize("extra", [[], ["--workers", "2"]], ids=["one process", "two workers"])
def test_serve_on_a_taken_port_says_so_and_names_a_free_one(home, taken_port, extra):
    line = one_line(run("serve", "--port", str(taken_port), *extra))
    assert f"port {taken_port}" in line and "already in use" in line and "#key=" not in line
    suggested = int(line.rsplit("--port ", 1)[1].split()[0])
    with socket.socket() as probe:  # the port it suggests was free when suggested
        probe.bind(("127.0.0.1", suggested))


def test_demo_on_a_taken_port_says_so(home, taken_port):
    line = one_line(run("demo", "--port", str(taken_port)))
    assert "already in use" in line and "--port" in line
    assert DemoService(home / "demo").running() is None  # its claim on BATON_HOME was given back


@pytest.mark.parametrize(("args", "said"), [
    (["--host", "10.255.255.1"], "not an address of this machine"),  # bind only: nothing is sent anywhere
    (["--port", "70000"], "not a port"),
    (["--log-level", "loud"], "not a log level"),
])
def test_serve_options_that_cannot_be_used(home, args, said):
    assert said in one_line(run("serve", *args, *(["--port", str(free_port())] if "--port" not in args else [])))


# --- ask --------------------------------------------------------------------------------


@pytest.mark.parametrize(("chart", "said"), [
    ("no-such-dir/revenue.svg", "there is no folder"),
    ("revenue.pdf", ".svg or .png"),
    (".", "that is a folder"),
])
def test_ask_with_a_chart_path_that_cannot_be_written_asks_nothing(home, tmp_path, monkeypatch, chart, said):
    monkeypatch.chdir(tmp_path)
    line = one_line(run("ask", QUESTION, "--chart", chart))
    assert said in line and "--chart" in line
    assert not (tmp_path / "revenue.pdf").exists()


@pytest.mark.parametrize(("database", "said"), [
    ("finance.sqlite", "Not a database URL"),  # a path, not a URL
    ("sqlite:///no-such-file.sqlite", "No database file"),
    ("http://example.com/db", "Not a database URL"),
    (UNREACHABLE_PG, "Cannot reach the database server"),
])
def test_ask_a_database_that_cannot_be_used(home, database, said):
    assert said in one_line(run("ask", "How many rows?", "--database", database))


@pytest.mark.parametrize(("args", "said"), [
    (["--docs", "no-such-folder"], "no such folder"),
    (["--semantic", "no-such-model.yaml"], "no such file"),
    (["--session", "nosuch"], "no session 'nosuch'"),
    (["--state", "sqlite:///state.sqlite"], "must be a PostgreSQL URL"),
    (["--state", "not a url"], "not a database URL"),
    (["--state", UNREACHABLE_PG], "cannot be used"),
    (["--max-data-age", "1d"], "--max-data-age needs"),
])
def test_ask_options_that_cannot_be_used(home, args, said):
    assert said in one_line(run("ask", QUESTION, *args))


def test_ask_with_a_semantic_model_that_is_not_yaml(home, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("metrics: [\n", encoding="utf-8")
    assert "not valid YAML" in one_line(run("ask", QUESTION, "--semantic", str(broken)))


def test_ask_with_a_model_string_that_names_no_model(home):
    assert "malformed model string" in one_line(run("ask", QUESTION, BATON_MODEL="gpt4"))


def test_ask_without_a_question_is_a_usage_error(home):
    result = run("ask")
    assert result.exit_code == 2 and "Traceback" not in result.output and "Missing argument" in result.output


# --- other commands ---------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["agents", "--database", "not a url"],
    ["agents", "--database", "sqlite:///no-such-file.sqlite"],
    ["db", "check", "not a url"],
    ["db", "grant", "not a url", "--schema", "public", "--role", "reader"],
    ["mcp", "--database", "not a url"],
    ["mcp", "--database", "sqlite:///no-such-file.sqlite"],
    ["verified", "list", "--database", "sqlite:///no-such-file.sqlite"],
    ["semantic", "init", "--database", "not a url"],
])
def test_a_database_url_that_cannot_be_used_anywhere(home, args):
    line = one_line(run(*args))
    assert "database" in line.lower()


@pytest.mark.parametrize("command", [["ask", QUESTION], ["verified", "list"], ["serve", "--port", "0"]])
def test_a_baton_home_that_cannot_be_a_folder(home, command):
    a_file = home / "a-file"
    a_file.write_text("", encoding="utf-8")
    line = one_line(run(*command, BATON_HOME=str(a_file)))
    assert "BATON_HOME" in line and "a file, not a folder" in line


def test_keys_on_a_state_that_does_not_answer(home):
    assert "cannot be used" in one_line(run("keys", "create", "--workspace", "demo", "--state", UNREACHABLE_PG))


def test_eval_mistakes(home, tmp_path):
    assert "does not exist" in one_line(run("eval", str(tmp_path / "no-such-set.jsonl")))
    assert "cannot read the report" in one_line(run("eval", "--baseline", str(tmp_path / "no-report.json")))
    a_file = tmp_path / "a-file"
    a_file.write_text("", encoding="utf-8")
    assert "--out" in one_line(run("eval", "--out", str(a_file / "reports")))


def test_semantic_init_into_a_missing_folder_drafts_nothing(home, tmp_path):
    database = f"sqlite:///{home / 'demo' / 'finance.sqlite'}"
    line = one_line(run("semantic", "init", "--database", database, "--out", str(tmp_path / "no-such-dir" / "model.yaml")))
    assert "there is no folder" in line


def test_checks_that_find_a_problem_exit_1(home):
    assert "no verified question" in one_line(run("verified", "remove", "no such question"), code=1)
    assert "nosuch" in one_line(run("sessions", "nosuch"), code=1)
