"""Verified questions of a workspace: saved with provenance, checked, used for matching, few-shot
examples and ``baton eval``, removed; usage counted; "Did you mean" on the answer path
(issue 14, part 2). Real SQLite databases, no model."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.evaluation import verified_questions
from baton.state.location import State
from baton.verified import Slot
from baton.workspace.database import open_database_workspace
from baton.workspace.verified import (
    VerifiedQuestionError,
    installed,
    remove_verified_question,
    save_verified_question,
    settle,
)

SHOP = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, ordered_at TEXT NOT NULL, amount REAL NOT NULL);
INSERT INTO customers VALUES (1, 'Ada', 'UK'), (2, 'Grace', 'US'), (3, 'Linus', 'FI');
INSERT INTO orders VALUES (1, 1, '2024-03-01', 120.0), (2, 2, '2024-05-02', 80.5), (3, 1, '2025-01-09', 40.0),
                          (4, 3, '2025-02-11', 300.0), (5, 2, '2025-03-15', 10.0);
"""
QUESTION = "What was order revenue by country in 2025?"
SQL = ("SELECT c.country, SUM(o.amount) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id "
       "WHERE o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01' GROUP BY c.country ORDER BY revenue DESC")


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(SHOP)
    return f"sqlite:///{path}", State.from_env(env={}, home=tmp_path / "home")


async def test_a_new_database_says_how_to_add_a_verified_question_then_answers_it_in_other_words(shop):
    url, state = shop
    async with open_database_workspace(url, None, state=state) as ws:
        before = await ws.answer("revenue per country in 2025")
        assert before.data is None and "no verified questions yet" in before.content and "baton verified add" in before.content
        assert before.metadata["llm_calls"] == 0
        saved = await save_verified_question(ws, QUESTION, SQL, slots=[Slot("year", "year", "2025")], user_id="ana")
        assert saved.agent == "database" and saved.record_id
        answer = await ws.answer("Order revenue per country for 2024")
        assert answer.metadata["fast_path"] == "verified_question" and answer.metadata["llm_calls"] == 0
        assert answer.data == [{"country": "UK", "revenue": 120.0}, {"country": "US", "revenue": 80.5}]
        near = await ws.answer("What was order revenue by customer in 2025?")  # customers, not countries
        assert near.data is None and near.suggested_followups == [QUESTION]
        record = ws.memory.get(ws.memory_scope(), saved.record_id)
        assert record.kind == "benchmark" and record.verified and record.provenance[0].user_id == "ana"
        assert record.data["slots"] == [{"name": "year", "kind": "year", "default": "2025"}]
        # few-shot examples: the SQL specialist's per-task memory bundle shows the pair
        agent = ws.orchestrator.agent_tools["database"].agent
        assert SQL.split(" FROM")[0] in (await agent.memory.bundle_for("revenue by country in 2023", "database")).text
        # baton eval reads the same set
        golden = await asyncio.to_thread(verified_questions, ws)
        assert [(q.question, q.sql) for q in golden.questions] == [(QUESTION, SQL)]
    async with open_database_workspace(url, None, state=state) as again:  # kept across restarts
        assert [v.question for v in installed(again)] == [QUESTION]
        assert (await again.answer("order revenue by country 2025")).metadata["fast_path"] == "verified_question"
        removed = await remove_verified_question(again, QUESTION)
        assert removed is not None and installed(again) == ()
        assert (await again.answer("order revenue by country 2025")).data is None
    async with open_database_workspace(url, None, state=state) as third:
        assert installed(third) == ()


@pytest.mark.parametrize("sql,slots,reason", [
    ("DELETE FROM orders", (), "unsafe"),
    ("SELECT country, SUM(amount) AS revenue FROM nowhere GROUP BY country", (), "does not run"),
    (SQL, (Slot("year", "year", "2023"),), "not in the question"),
    ("SELECT country FROM customers", (Slot("top", "limit"),), "ranked"),
])
async def test_sql_that_is_unsafe_failing_or_unbindable_is_refused_and_nothing_is_stored(shop, sql, slots, reason):
    url, state = shop
    async with open_database_workspace(url, None, state=state) as ws:
        with pytest.raises(VerifiedQuestionError, match=reason):
            await save_verified_question(ws, QUESTION, sql, slots=slots)
        assert installed(ws) == ()
        assert ws.memory.list_records(ws.memory_scope(), kind="benchmark") == []
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:  # the DELETE never ran
        assert db.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == 5


async def test_saving_an_answer_as_a_verified_question_then_asking_it_in_other_words(tmp_path):
    build_demo_database(tmp_path / "finance.sqlite", sales_rows=500)
    async with build_demo_workspace(tmp_path) as ws:
        first = await ws.answer("How many Epson products are there?")
        assert first.data is None  # not verified yet, and no model
        answer = first.copy(input="How many Epson products are there?", query="SELECT COUNT(*) AS products FROM products WHERE unit_id = 2",
                            metadata={"routed_to": "epson_finance"})
        saved = await save_verified_question(ws, "", answer=answer, source="page", session_id=first.session_id)
        assert saved.question == "How many Epson products are there?" and saved.agent == "epson_finance"
        again = await ws.answer("Number of Epson products?")
        assert again.metadata["routed_to"] == "epson_finance" and again.data == [{"products": 4}]


async def test_a_verified_question_answered_twice_is_counted_as_applied_twice(tmp_path):
    build_demo_database(tmp_path / "finance.sqlite", sales_rows=500)
    async with build_demo_workspace(tmp_path) as ws:
        for question in ("What was Epson revenue by month in 2025?", "epson monthly revenue 2024"):
            answer = await ws.answer(question)
            assert answer.metadata["fast_path"] == "verified_question"
        await settle()
        record = ws.memory.get(ws.memory_scope(), answer.metadata["verified_record"])
        assert record.times_applied == 2 and record.text == "What was Epson revenue by month in 2025?"


async def test_a_removed_demo_question_stays_removed_after_a_restart(tmp_path):
    build_demo_database(tmp_path / "finance.sqlite", sales_rows=500)
    question = "What were total costs by category in 2025?"
    async with build_demo_workspace(tmp_path) as ws:
        assert await remove_verified_question(ws, question) is not None
        assert (await ws.answer("costs by category in 2025")).metadata.get("fast_path") != "verified_question"
    async with build_demo_workspace(tmp_path) as ws:
        assert question not in [v.question for v in installed(ws)] and len(installed(ws)) == 9
        assert await remove_verified_question(ws, "a question nobody verified") is None


async def test_the_log_line_counts_no_llm_call_when_there_is_no_model(tmp_path, caplog):
    import logging

    build_demo_database(tmp_path / "finance.sqlite", sales_rows=500)
    async with build_demo_workspace(tmp_path) as ws:
        with caplog.at_level(logging.INFO, logger="baton.workspace"):
            for question in ("Write a poem about spring", "What is a roadshow?", "pokemon revenue by month 2024"):
                await ws.answer(question)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("answered in workspace")]
    assert len(lines) == 3 and all("llm_calls=0" in line for line in lines), lines
