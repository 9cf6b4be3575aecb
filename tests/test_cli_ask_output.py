"""`baton ask` keeps standard output for the answer: `--json` pipes into a parser, notices
go to standard error, and an unknown session is one line and exit 2, not a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BATON = str(Path(sys.executable).with_name("baton"))


def _ask(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"BATON_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    return subprocess.run([BATON, "ask", *args], capture_output=True, text=True, env=env, timeout=240)


def test_ask_json_prints_only_the_answer_on_stdout_and_an_unknown_session_is_one_line(tmp_path):
    answered = _ask(tmp_path, "--json", "What was Pokemon revenue by month in 2025?")
    assert answered.returncode == 0, answered.stderr
    answer = json.loads(answered.stdout)  # nothing but the JSON on stdout
    assert len(answer["data"]) == 12
    assert "No model configured" in answered.stderr

    unknown = _ask(tmp_path, "--session", "no-such-session", "Show only the top 5")
    assert unknown.returncode == 2
    assert "there is no session 'no-such-session'" in unknown.stderr
    assert "Traceback" not in unknown.stderr + unknown.stdout
