"""``baton eval`` from the command line, with no model configured: the demo's verified set
at 100 % with zero LLM calls, a set that needs a model (skipped, with the reason), the
regression gate, configuration errors, and hostile text kept inert in the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.demo.verified import VERIFIED_QUESTIONS


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_MODEL", raising=False)
    monkeypatch.delenv("BATON_STATE_URL", raising=False)
    monkeypatch.delenv("BATON_MODEL_PRICES", raising=False)
    return tmp_path / "home"


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "220", **(env or {})})


def write_set(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def test_the_demo_verified_set_without_a_model_is_100_percent_with_zero_llm_calls(home, tmp_path):
    out = tmp_path / "out"
    result = run("eval", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "100.0% (10/10)" in result.output
    assert f"No model configured: {len(VERIFIED_QUESTIONS)} question(s) answered with 0 LLM calls." in result.output
    data = report(out)
    s = data["summary"]
    assert data["no_model"] is True and data["model"] is None
    assert s["execution"] == {"right": 10, "out_of": 10, "rate": 1.0}
    assert s["routing"] == {"right": 10, "out_of": 10, "rate": 1.0}
    assert s["llm_calls"] == 0 and s["tokens"] == 0 and s["cost_usd"] == 0 and s["skipped"] == 0
    assert {q["fast_path"] for q in data["questions"]} == {"verified_question"}
    assert {q["routed_to"][0] for q in data["questions"]} == {v.agent for v in VERIFIED_QUESTIONS}
    page = (out / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "No model configured: 10 question(s) answered with 0 LLM calls." in page
    assert not (home / "demo").exists()  # a throwaway state: the user's BATON_HOME is untouched


def test_questions_that_need_a_model_are_skipped_with_the_reason(home, tmp_path):
    golden = write_set(tmp_path / "mixed.jsonl", [
        {"id": "pokemon", "question": "what was pokemon revenue by month in 2025", "sql": VERIFIED_QUESTIONS[0].sql,
         "specialist": "pokemon_finance"},
        {"id": "poem", "question": "Write a poem about the Epson printers", "specialist": "epson_finance"},
        {"id": "prices", "question": "Which roadshow city had the nicest venues?",  # no metric: needs a model
         "sql": "SELECT city, AVG(ticket_price) FROM roadshow_events WHERE deleted_at IS NULL GROUP BY city"},
        {"id": "broken-gold", "question": "How many tickets were sold?", "sql": "SELECT SUM(tickets) FROM roadshow_events"},
    ])
    out = tmp_path / "out"
    result = run("eval", str(golden), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "skipped (2)" in result.output and "needs a model" in result.output
    assert "1 question(s) answered with 0 LLM calls; 2 skipped because they need a model" in result.output
    by_id = {q["id"]: q for q in report(out)["questions"]}
    assert by_id["pokemon"]["status"] == "pass"
    assert by_id["poem"]["status"] == by_id["prices"]["status"] == "skipped"
    assert by_id["prices"]["skip_reason"].startswith("needs a model")
    # a gold query that fails is the golden set's error: reported, nothing asked, in no accuracy
    assert by_id["broken-gold"]["status"] == "gold_error" and by_id["broken-gold"]["latency_s"] is None
    assert "no such column: tickets" in by_id["broken-gold"]["reasons"][0] and "no such column: tickets" in result.output
    assert report(out)["summary"]["execution"] == {"right": 1, "out_of": 1, "rate": 1.0}


DEMO_SET = [
    {"id": f"q{i}", "question": v.question, "sql": v.sql, "specialist": v.agent} for i, v in enumerate(VERIFIED_QUESTIONS[:4], start=1)
]


def test_the_regression_gate_fails_a_worse_run_and_names_the_questions(home, tmp_path):
    first = run("eval", str(write_set(tmp_path / "set.jsonl", DEMO_SET)), "--out", str(tmp_path / "base"))
    assert first.exit_code == 0, first.output
    baseline = tmp_path / "base" / "report.json"
    assert report(tmp_path / "base")["summary"]["passed"] == 4

    worse = [dict(item) for item in DEMO_SET]  # the same ids; two answers no longer what is expected
    worse[1]["sql"] = worse[1]["sql"].replace("ORDER BY revenue DESC", "ORDER BY revenue ASC")
    worse[2]["specialist"] = "pokemon_finance"
    second = run("eval", str(write_set(tmp_path / "worse.jsonl", worse)), "--out", str(tmp_path / "now"), "--baseline", str(baseline))
    assert second.exit_code == 1, second.output
    assert "regressed: q2:" in second.output and "regressed: q3:" in second.output
    assert "regressed: q1" not in second.output and "regressed: q4" not in second.output
    assert "execution accuracy dropped from 100.0% to 75.0%" in second.output
    assert "routing accuracy dropped from 100.0% to 75.0%" in second.output

    tolerant = run("eval", str(tmp_path / "worse.jsonl"), "--out", str(tmp_path / "again"), "--baseline", str(baseline),
                   "--max-drop", "30")
    assert tolerant.exit_code == 0, tolerant.output
    assert "regressed: q2:" in tolerant.output  # still named, within the tolerance

    same = run("eval", str(tmp_path / "set.jsonl"), "--out", str(tmp_path / "same"), "--baseline", str(baseline))
    assert same.exit_code == 0 and "gate: passed against the baseline (4 questions compared)" in same.output


def test_fail_under_gates_on_execution_accuracy(home, tmp_path):
    worse = [dict(item) for item in DEMO_SET]
    worse[0]["sql"] = "SELECT 1"
    golden = write_set(tmp_path / "set.jsonl", worse)
    assert run("eval", str(golden), "--out", str(tmp_path / "a"), "--fail-under", "75").exit_code == 0
    failing = run("eval", str(golden), "--out", str(tmp_path / "b"), "--fail-under", "80")
    assert failing.exit_code == 1 and "is under 80%" in failing.output


def test_configuration_errors_exit_2_and_say_what_is_wrong(home, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "fine", "sql": "SELECT 1"}\n{"question": "no expectation"}\n')
    result = run("eval", str(bad), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "bad.jsonl:2" in result.output and "needs 'sql', 'rows' or 'specialist'" in result.output

    not_a_report = tmp_path / "x.json"
    not_a_report.write_text("{}")
    result = run("eval", "--baseline", str(not_a_report), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "is not a baton eval report" in result.output

    result = run("eval", "--budget-usd", "1", "--out", str(tmp_path / "o"),
                 env={"BATON_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": "sk-test-not-used"})
    assert result.exit_code == 2 and "--budget-usd needs the price of openai:gpt-4o-mini" in result.output
    assert not (tmp_path / "o" / "report.json").exists()  # nothing ran


def test_hostile_question_text_is_inert_in_the_terminal(home, tmp_path):
    hostile = "[bold red]owned[/bold red] \x1b]0;retitled\x07 [link=https://evil.example]click[/link] \u202egnp.exe"
    golden = write_set(tmp_path / "hostile.jsonl", [{"id": "h", "question": hostile, "rows": [[1]]}])
    result = run("eval", str(golden), "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    assert "[bold red]owned[/bold red]" in result.output  # shown as typed, not as markup
    assert "\x1b]0;" not in result.output and "\u202e" not in result.output
    assert report(tmp_path / "o")["questions"][0]["question"] == hostile  # the report keeps the exact text


def test_tags_and_limit_choose_the_questions(home, tmp_path):
    tagged = [dict(item, tags=["revenue"] if i % 2 else ["products"]) for i, item in enumerate(DEMO_SET)]
    golden = write_set(tmp_path / "tagged.jsonl", tagged)
    result = run("eval", str(golden), "--tag", "revenue", "--out", str(tmp_path / "a"))
    assert result.exit_code == 0 and [q["id"] for q in report(tmp_path / "a")["questions"]] == ["q2", "q4"]
    result = run("eval", str(golden), "--limit", "1", "--out", str(tmp_path / "b"))
    assert result.exit_code == 0 and [q["id"] for q in report(tmp_path / "b")["questions"]] == ["q1"]
    result = run("eval", str(golden), "--tag", "nothing-has-this", "--out", str(tmp_path / "c"))
    assert result.exit_code == 2 and "No question of the set matches --tag" in result.output
