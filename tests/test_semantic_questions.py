"""The semantic question set through the demo's answer path, no model: >= 85 % exactly the
gold rows, and never a wrong table (bench/semantic_questions.py prints the same figures on
the full demo)."""

from __future__ import annotations

import contextlib
import sqlite3

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from semantic_gold import load_cases, rows_match


async def test_metric_questions_get_exactly_the_gold_rows_or_an_ask_back(tmp_path):
    build_demo_database(tmp_path / "finance.sqlite", sales_rows=5000)
    cases = load_cases()
    exact, wrong = [], []
    with contextlib.closing(sqlite3.connect(tmp_path / "finance.sqlite")) as db:
        async with build_demo_workspace(tmp_path) as ws:
            for case in cases["answer"]:
                answer = await ws.answer(case["q"])
                gold = [list(r) for r in db.execute(case["sql"]).fetchall()]
                if answer.data is None:
                    assert answer.metadata.get("semantic_ask_back") or answer.suggested_followups, case["q"]
                elif rows_match(answer.results.rows, gold, ordered=bool(case.get("ordered"))):
                    exact.append(case["q"])
                else:
                    wrong.append(case["q"])
                assert answer.metadata["llm_calls"] == 0
            for question in cases["ask_back"]:
                answer = await ws.answer(question)
                if answer.data is not None:
                    wrong.append(question)
    assert len(cases["answer"]) >= 60 and not wrong, wrong
    assert len(exact) / len(cases["answer"]) >= 0.85
