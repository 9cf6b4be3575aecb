"""Metric questions answered by the semantic layer with no model, against hand-written gold SQL (issue 18).

    .venv/bin/python bench/semantic_questions.py [--verbose] [--sales-rows N]

Builds the demo (the full sales_transactions table by default) in a temporary folder and
asks every question of ``tests/data/semantic_questions.json`` through the demo workspace's
one answer path (``Workspace.answer``, no model configured: verified questions first, then
the semantic layer through the lexical router). Prints:

- **exact**: answerable questions whose answer has exactly the gold rows (the gold SQL run on
  the same database); target >= 85 %;
- **wrong**: answers with a table that is not the gold one, plus ask-back questions
  (ambiguous, unknown words, impossible breakdowns, SQL fragments) answered with any table;
  target 0;
- **asked back**: answerable questions that got an ask-back instead (not wrong: no guess);
- time per question on the answer path.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from baton.demo.data import SALES_ROWS, build_demo_database
from baton.demo.workspace import build_demo_workspace
from semantic_gold import load_cases, rows_match


async def run(verbose: bool, sales_rows: int) -> int:
    cases = load_cases()
    exact, asked_back, wrong, failed = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "finance.sqlite"
        build_demo_database(database, sales_rows=sales_rows)
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as gold_db:
            async with build_demo_workspace(Path(tmp)) as ws:
                started = time.perf_counter()
                for case in cases["answer"]:
                    answer = await ws.answer(case["q"])
                    gold = [list(r) for r in gold_db.execute(case["sql"]).fetchall()]
                    if answer.results is not None and answer.data is not None:
                        if rows_match(answer.results.rows, gold, ordered=bool(case.get("ordered"))):
                            exact.append(case["q"])
                        else:
                            wrong.append(f"{case['q']!r}: got {answer.results.rows[:4]} ... expected {gold[:4]} ... "
                                         f"(semantic query: {answer.metadata.get('semantic_query')})")
                    elif answer.metadata.get("semantic_ask_back") or answer.suggested_followups:
                        asked_back.append(f"{case['q']!r}: {answer.content.splitlines()[0]} {answer.suggested_followups}")
                    else:
                        failed.append(f"{case['q']!r}: {answer.error or answer.content[:160]}")
                for question in cases["ask_back"]:
                    answer = await ws.answer(question)
                    if answer.data is not None:
                        wrong.append(f"ask-back question {question!r} answered with a table "
                                     f"(semantic query: {answer.metadata.get('semantic_query')})")
                asked = len(cases["answer"]) + len(cases["ask_back"])
                elapsed = time.perf_counter() - started
    total = len(cases["answer"])
    rate = len(exact) / total
    print(f"metric questions: {total} answerable + {len(cases['ask_back'])} to ask back "
          f"(demo, {sales_rows} sales transactions, no model, through Workspace.answer)")
    print(f"exact gold rows: {len(exact)}/{total} = {rate:.1%} (target >= 85%)")
    print(f"wrong answers: {len(wrong)} (target 0)")
    for line in wrong:
        print(f"  WRONG {line}")
    print(f"asked back instead of answering: {len(asked_back)}")
    for line in asked_back if verbose or len(asked_back) <= 10 else asked_back[:10]:
        print(f"  ask-back {line}")
    if failed:
        print(f"no answer (error or refusal): {len(failed)}")
        for line in failed:
            print(f"  FAILED {line}")
    print(f"{asked} questions in {elapsed:.2f} s ({elapsed / asked * 1000:.1f} ms per question, answer path included)")
    return 0 if rate >= 0.85 and not wrong else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every ask-back")
    parser.add_argument("--sales-rows", type=int, default=SALES_ROWS, help="rows of the large sales_transactions table")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(run(args.verbose, args.sales_rows)))


if __name__ == "__main__":
    main()
