"""``baton sessions`` pages: the newest 50 (``--limit N``, ``--all``) and says how many there
are; a session id it does not know is one line, exit 1, never a traceback."""

from __future__ import annotations

import asyncio
import re

import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.demo.data import build_demo_database
from baton.state.location import State

SESSION_LINE = re.compile(r"^[0-9a-f]{32}\s", re.M)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path))
    for name in ("BATON_MODEL", "BATON_STATE_URL", "BATON_API_KEYS"):
        monkeypatch.delenv(name, raising=False)
    build_demo_database(tmp_path / "demo" / "finance.sqlite", sales_rows=200)
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def conversations(home, n: int) -> None:
    async def make() -> None:
        store = State.from_env(home=home).place_for("demo").sessions()
        try:
            for i in range(n):
                await store.create("demo", f"conversation {i}")
        finally:
            store.close()

    asyncio.run(make())


def test_sessions_lists_50_and_says_how_many_there_are(home):
    conversations(home, 202)
    default = run("sessions")
    assert default.exit_code == 0, default.output
    assert len(SESSION_LINE.findall(default.output)) == 50
    assert "showing 50 of 202; --all to list every one" in default.output
    limited = run("sessions", "--limit", "7")
    assert len(SESSION_LINE.findall(limited.output)) == 7 and "showing 7 of 202" in limited.output
    every = run("sessions", "--all")
    assert every.exit_code == 0 and len(SESSION_LINE.findall(every.output)) == 202 and "showing" not in every.output
    assert "conversation 201" in every.output and "conversation 0" in every.output


def test_sessions_says_nothing_more_when_all_are_listed(home):
    conversations(home, 3)
    listed = run("sessions")
    assert listed.exit_code == 0 and len(SESSION_LINE.findall(listed.output)) == 3 and "showing" not in listed.output


def test_an_unknown_session_is_one_line(home):
    conversations(home, 1)
    result = run("sessions", "nosuch")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if "nosuch" in line]
    assert len(lines) == 1 and "baton sessions" in lines[0], result.output
    assert result.output.rstrip().endswith(lines[0])  # the last thing said, and nothing after it
