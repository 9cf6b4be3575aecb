"""The no-model fallback says what this workspace answers (issue 28, part 3): metric questions
from its semantic model (each answered when asked), verified questions, document questions,
and the exact ``baton verified add`` command for this workspace, with its ``--database``.
Real SQLite databases and the real workspace, no model."""

from __future__ import annotations

import sqlite3

import pytest
import yaml

from baton.agents.lexical_routing import add_verified_hint, did_you_mean
from baton.state.location import State
from baton.workspace.database import open_database_workspace
from baton.workspace.examples import metric_questions

SHOP = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     ordered_at TEXT NOT NULL, amount REAL NOT NULL);
INSERT INTO customers VALUES (1, 'Ada', 'UK'), (2, 'Grace', 'US'), (3, 'Linus', 'FI');
INSERT INTO orders VALUES (1, 1, '2024-03-01', 120.0), (2, 2, '2024-05-02', 80.5), (3, 1, '2025-01-09', 40.0),
                          (4, 3, '2025-02-11', 300.0), (5, 2, '2025-03-15', 10.0);
"""
MODEL = {
    "name": "shop",
    "entities": [{"name": "customers", "table": "customers"},
                 {"name": "orders", "table": "orders", "time": {"column": "ordered_at", "format": "date"},
                  "joins": [{"to": "customers", "on": {"customer_id": "id"}}]}],
    "measures": [{"name": "revenue_amount", "entity": "orders", "agg": "sum", "expr": "amount"},
                 {"name": "order_count", "entity": "orders", "agg": "count", "expr": "1"}],
    "metrics": [{"name": "revenue", "measure": "revenue_amount", "synonyms": ["sales"]},
                {"name": "orders", "measure": "order_count", "decimals": 0}],
    "dimensions": [{"name": "country", "entity": "customers", "expr": "country"}],
}


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(SHOP)
    model = tmp_path / "shop.yaml"
    model.write_text(yaml.safe_dump(MODEL), encoding="utf-8")
    return f"sqlite:///{path}", State.from_env(env={}, home=tmp_path / "home"), model


async def test_the_fallback_lists_metric_questions_that_answer_and_the_add_command_for_this_database(shop):
    url, state, model = shop
    async with open_database_workspace(url, None, state=state, semantic=model) as ws:
        answer = await ws.answer("Write me a poem about spring")
        assert answer.data is None and answer.metadata["llm_calls"] == 0
        assert "can only answer the verified questions" not in answer.content  # the old, untrue sentence
        assert "Metric questions its semantic model answers" in answer.content
        assert f'baton verified add "<question>" "<SQL that answers it>" --database {url}' in answer.content
        listed = [line[2:] for line in answer.content.splitlines() if line.startswith("- ")]
        assert "How many orders" in listed and len(listed) >= 3
        assert listed == await metric_questions(ws)  # the page's examples are the same questions
        for question in listed:  # every example answers itself when asked
            asked = await ws.answer(question)
            assert asked.metadata.get("fast_path") == "semantic_layer" and asked.data is not None, question
        count = await ws.answer("How many orders")
        assert count.data == [{"orders": 5}]


async def test_without_a_model_file_the_hint_names_the_database(shop):
    url, state, _ = shop
    async with open_database_workspace(url, None, state=state) as ws:
        answer = await ws.answer("revenue per country in 2025")
    assert "no verified questions yet" in answer.content
    assert f"--database {url}" in answer.content


def test_the_hint_masks_a_password_and_quotes_the_url():
    said = add_verified_hint("postgresql+psycopg://ana:s3cret@db.example:5432/shop")
    assert "s3cret" not in said and "--database 'postgresql+psycopg://ana:***@db.example:5432/shop'" in said
    assert "--database" not in add_verified_hint(None)  # the demo workspace is the command's default


def test_the_fallback_lists_document_questions_and_verified_ones():
    text = did_you_mean([], verified_count=0, documents=["Tell me about refunds"], metrics=["How many orders"])
    assert "- Tell me about refunds" in text and "- How many orders" in text and "BATON_MODEL" in text
