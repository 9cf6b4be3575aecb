"""``baton eval`` asks the verified questions kept in the workspace's own state (saved from the
page or by ``baton verified add``; ``BATON_STATE_URL``, else ``BATON_HOME``) even though it
answers on a throwaway state: alone, or beside a golden set; ``--no-verified`` leaves them
out. Each is answered as the workspace it was saved in answers it (no model here: the
verified fast path). The demo on SQLite files, no mocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.demo.data import build_demo_database

SAVED = "How many Pokemon products are there?"
SAVED_ID = "verified:how-many-pokemon-products-are-there"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    for name in ("BATON_MODEL", "BATON_STATE_URL", "BATON_MODEL_PRICES", "BATON_API_KEYS"):
        monkeypatch.delenv(name, raising=False)
    build_demo_database(tmp_path / "home" / "demo" / "finance.sqlite", sales_rows=200)
    return tmp_path / "home"


def run(*args: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "220"})


def saved(home: Path) -> None:
    result = run("verified", "add", SAVED, "SELECT COUNT(*) AS products FROM products WHERE unit_id = 1", "--agent", "pokemon_finance")
    assert result.exit_code == 0, result.output


def asked(out: Path) -> dict[str, dict]:
    return {q["id"]: q for q in json.loads((out / "report.json").read_text())["questions"]}


def test_eval_asks_the_verified_questions_saved_in_the_workspace_state(home, tmp_path):
    saved(home)
    result = run("eval", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    questions = asked(tmp_path / "out")
    assert questions[SAVED_ID]["status"] == "pass" and questions[SAVED_ID]["fast_path"] == "verified_question"
    assert len(questions) == 11  # the demo's ten built-in ones, and the saved one


def test_a_golden_set_is_asked_with_the_saved_questions_unless_no_verified(home, tmp_path):
    saved(home)
    golden = tmp_path / "set.jsonl"
    golden.write_text(json.dumps({"id": "units", "question": "How many business units are there?",
                                  "sql": "SELECT COUNT(*) FROM business_units"}) + "\n", encoding="utf-8")
    assert run("eval", str(golden), "--out", str(tmp_path / "both")).exit_code == 0
    both = asked(tmp_path / "both")
    assert {"units", SAVED_ID} <= set(both) and both[SAVED_ID]["status"] == "pass"
    assert run("eval", str(golden), "--no-verified", "--out", str(tmp_path / "only")).exit_code == 0
    assert set(asked(tmp_path / "only")) == {"units"}


def test_a_question_the_golden_set_asks_already_is_asked_once(home, tmp_path):
    saved(home)
    golden = tmp_path / "set.jsonl"
    golden.write_text(json.dumps({"id": "mine", "question": "how many pokemon products are there",
                                  "sql": "SELECT COUNT(*) FROM products WHERE unit_id = 1"}) + "\n", encoding="utf-8")
    assert run("eval", str(golden), "--out", str(tmp_path / "out")).exit_code == 0
    assert set(asked(tmp_path / "out")) == {"mine"}


def test_no_verified_without_a_golden_set_is_refused(home):
    result = run("eval", "--no-verified")
    assert result.exit_code == 2 and "nothing to evaluate" in result.output and "Traceback" not in result.output


def test_an_embedded_state_with_nothing_saved_is_left_untouched(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_MODEL", raising=False)
    monkeypatch.delenv("BATON_STATE_URL", raising=False)
    result = run("eval", "--out", str(tmp_path / "out"), "--limit", "1")
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "home").exists()
