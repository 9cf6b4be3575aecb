"""The SQL specialist and the memory, end to end on a real SQLite database: learnings from a
failed-then-fixed sequence are stored through the gate, come back in the next request's
bundle (with the bundle's lock on the answer), and a long struggle triggers one deep analysis."""

import json
import sqlite3

import pytest

from baton.agents import AgentContext
from baton.llm import FunctionModel, tool_call
from baton.memory import MemoryStore, Principal, TrustedAuthenticator
from baton.memory.bridge import SQLMemory
from baton.messages import LLMResponse
from baton.specialists.sql import SQLAgent, SQLConnection


@pytest.fixture
async def setup(tmp_path):
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, amount_cents INTEGER, region TEXT)")
        db.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(1, 1250, "north"), (2, 800, "south")])
    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite'}", authenticator=TrustedAuthenticator())
    scope = store.open(Principal("shop"))
    connection = SQLConnection(f"sqlite:///{path}", id="shop")
    yield connection, store, scope
    await connection.aclose()
    store.close()


def scripted(*sqls, analysis=None):
    """run_sql with each SQL in turn (each after the previous tool result), then an answer.
    A deep-analysis request (no tools) gets ``analysis``."""
    seen, prompts = [], []

    def fn(messages, tools):
        prompts.append(messages[0].content)
        if not tools:
            seen.append(messages)
            return json.dumps(analysis or {"learnings": []})
        turn = sum(1 for m in messages if m.role == "tool")
        if turn < len(sqls):
            return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": sqls[turn]})])
        return "done"

    model = FunctionModel(fn)
    model.analysis_requests = seen
    model.system_prompts = prompts
    return model


async def test_a_learning_is_stored_then_reaches_the_next_bundle(setup):
    connection, store, scope = setup
    model = scripted("SELECT SUM(amount) FROM orders", "SELECT SUM(amount_cents) / 100.0 AS total FROM orders")
    agent = SQLAgent(connection, name="shop", model=model, memory=SQLMemory(store, scope, agent="shop"))
    first = await agent.run(AgentContext(), question="total sales?")
    assert first.ok and first.learnings
    stored = store.list_records(scope, kind="learning")
    assert {r.category for r in stored} >= {"column_correction"} and all(r.connection_id == "shop" for r in stored)

    second_model = scripted("SELECT region FROM orders")
    second = await SQLAgent(connection, name="shop", model=second_model, memory=SQLMemory(store, scope)).run(
        AgentContext(), question="total sales by region?")
    lessons = [r.text for r in stored]
    assert any(lesson in second_model.system_prompts[0] for lesson in lessons), "the learning is in the next bundle"
    assert second.ai_message.metadata["memory_lock"]["records"], "the bundle's records are pinned on the answer"
    assert model.analysis_requests == []  # two attempts: no deep analysis


async def test_more_than_three_attempts_trigger_one_deep_analysis_then_a_cooldown(setup):
    connection, store, scope = setup
    bad = ["SELECT nope FROM orders", "SELECT nada FROM orders", "SELECT zip FROM orders"]
    analysis = {"learnings": [{"category": "schema_gotcha", "lesson": "orders stores money in amount_cents.",
                               "tables": ["orders"], "columns": ["amount_cents"]}]}
    for round_ in range(2):
        model = scripted(*bad, "SELECT SUM(amount_cents) FROM orders", analysis=analysis)
        agent = SQLAgent(connection, name="shop", model=model, memory=SQLMemory(store, scope), max_attempts=5)
        result = await agent.run(AgentContext(), question="total?")
        assert result.ok and len(result.attempts) == 4
        assert len(model.analysis_requests) == (1 if round_ == 0 else 0)  # the second round is in the cooldown
    lessons = [r.text for r in store.list_records(scope, kind="learning")]
    assert "orders stores money in amount_cents." in lessons
