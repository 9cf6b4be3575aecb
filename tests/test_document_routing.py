"""Documents without a model: the router probes the knowledge index for every question, so
definition and policy questions reach the documents and data questions do not; the answer is
clean Markdown listing each source once (issue 14, part 4)."""

from __future__ import annotations

import sqlite3

import pytest

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.state.location import State
from baton.workspace.database import open_database_workspace


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("demo-docs")
    build_demo_database(directory / "finance.sqlite", sales_rows=500)
    return directory


def consulted(answer) -> set[str]:
    return {answer.metadata.get("routed_to") or "", *(answer.metadata.get("agents_consulted") or ())} - {""}


@pytest.mark.parametrize("question,heading,source", [
    ("What is a roadshow?", "Roadshow", "glossary.md"),
    ("How are cancelled roadshow events handled?", "Cancelled roadshow events", "data_rules.md"),
    ("What counts as revenue?", "Revenue", "metrics.md"),
    ("What is an EcoTank?", "EcoTank", "glossary.md"),
    ("How is profit defined?", "Profit", "metrics.md"),
])
async def test_definition_and_policy_questions_reach_the_documents_as_clean_markdown(demo_dir, question, heading, source):
    async with build_demo_workspace(demo_dir) as ws:
        answer = await ws.answer(question)
    assert consulted(answer) == {"finance_docs"} and answer.data is None and answer.metadata["llm_calls"] == 0
    first = answer.content.split("\n\n")[1]
    assert first == f"**{heading}** — *{source}* [1]"  # the passage that answers, first, under its own heading
    assert "## " not in answer.content and "[1] ##" not in answer.content and "Sources:" not in answer.content
    files = [s.source for s in answer.source_documents]
    assert files[0] == source and len(files) == len(set(files))  # each source once


@pytest.mark.parametrize("question", [
    "What was Pokemon revenue by quarter in 2025?", "total sales in 2024", "Which products sold the least?",
    "profit by roadshow city in 2024", "How many roadshow events were cancelled in 2025?",
])
async def test_data_questions_never_get_document_passages(demo_dir, question):
    async with build_demo_workspace(demo_dir) as ws:
        answer = await ws.answer(question)
    assert "finance_docs" not in consulted(answer) and answer.source_documents == []
    # answered (or asked back) by the semantic layer, else the closest verified questions: never documents
    assert answer.metadata.get("fast_path") == "semantic_layer" or (
        "Did you mean one of these?" in answer.content and len(answer.suggested_followups) == 3)


async def test_your_own_database_with_documents_routes_definitions_to_them(tmp_path):
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT, amount REAL);"
                           "INSERT INTO orders VALUES (1, 'refunded', 10), (2, 'paid', 20);")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "glossary.md").write_text("# Glossary\n\n## Refund\n\nAlso called: chargeback.\n\nA refund returns an order's "
                                      "amount to the customer; refunded orders keep status `refunded`.\n", encoding="utf-8")
    state = State.from_env(env={}, home=tmp_path / "home")
    async with open_database_workspace(f"sqlite:///{db}", None, docs=docs, state=state) as ws:
        definition = await ws.answer("What is a chargeback?")
        data = await ws.answer("total refunded amount by month in 2025")
    assert consulted(definition) == {"documents"} and "**Refund** — *glossary.md* [1]" in definition.content
    assert "documents" not in consulted(data) and "no verified questions yet" in data.content
