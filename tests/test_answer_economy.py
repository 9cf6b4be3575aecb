"""What a repeated question no longer costs (issue 13), shown by counting work, not time:
the journal gains no event once an answer's insights are at their cap, the tool-calling loop
never encodes a tool result it will not send, a vetted query is not parsed again, a result
already dressed is not dressed again, and a pass-through answer does not deep-copy its rows."""

from __future__ import annotations

import sqlite3

import pytest

import baton.specialists.sql.validation as validation
import baton.viz.presentation as presentation
from agent_doubles import TableAgent
from baton.agents import LexicalRouter, OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.memory import MemoryStore, TrustedAuthenticator
from baton.messages import LLMResponse
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.connection import SQLConnection
from baton.state import SessionStore
from baton.verified import VerifiedQuestion
from baton.workspace import Workspace

QUESTION = "What was revenue by month in 2025?"


@pytest.fixture
def workspace(tmp_path):
    path = tmp_path / "sales.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sales (month TEXT, revenue INTEGER)")
        conn.executemany("INSERT INTO sales VALUES (?, ?)", [(f"2025-{m:02d}", 100 + m * 7 + (300 if m == 11 else 0)) for m in range(1, 13)])
    verified = [VerifiedQuestion(QUESTION, "SELECT month, revenue FROM sales ORDER BY month", "sales")]
    orchestrator = OrchestratorAgent("o", model=LexicalRouter(min_score=0.0), verified=verified)
    connection = SQLConnection(f"sqlite:///{path}", id="sales")
    orchestrator.add_agent(SQLAgent(connection, name="sales", verified=verified))
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite'}", authenticator=TrustedAuthenticator())
    ws = Workspace("w", orchestrator, SessionStore(tmp_path / "s.sqlite"), memory=memory)
    ws.own(connection.aclose)
    return ws


async def test_a_repeated_answer_stops_growing_the_journal(workspace):
    async with workspace:
        heads = []
        for _ in range(14):
            answer = await workspace.answer(QUESTION)
            await workspace.bulkheads.drain()
            heads.append(workspace.memory.head_seq(workspace.memory_scope()))
        assert answer.insights
        assert heads[-1] == heads[-4]  # insights at their cap: nothing changes, nothing is written
        assert heads[1] > heads[0]  # before the cap, being found again is recorded


async def test_vetted_queries_and_dressed_results_are_not_redone(workspace, monkeypatch):
    checks, dressings = [], []
    real_check, real_choose = validation.check_safety, presentation.choose_chart
    monkeypatch.setattr(validation, "check_safety", lambda *a, **k: checks.append(a[0]) or real_check(*a, **k))
    monkeypatch.setattr(presentation, "choose_chart", lambda *a, **k: dressings.append(1) or real_choose(*a, **k))
    validation._VETTED.clear()
    presentation._DRESSED.clear()
    async with workspace:
        first = await workspace.answer(QUESTION)
        for _ in range(5):
            again = await workspace.answer(QUESTION)
    assert len(checks) == 1 and len(dressings) == 1
    assert again.data == first.data and again.viz_config == first.viz_config and again.insights == first.insights
    unsafe = [VerifiedQuestion("drop it", "DROP TABLE sales", "sales")]
    agent = workspace.orchestrator.agent_tools["sales"].agent
    from baton.agents import AgentContext

    agent.verified = tuple(unsafe)
    for _ in range(2):  # a refused query is checked again every time, never remembered
        refused = await agent.run(AgentContext(), question="drop it")
        assert refused.error_type == "unsafe_sql"
    assert checks.count("DROP TABLE sales") == 2


async def test_the_early_exit_never_encodes_the_tool_result(monkeypatch):
    import baton.llm.tokens as tokens

    encoded = []
    real = tokens.estimate_tokens
    monkeypatch.setattr(tokens, "estimate_tokens", lambda text, encoding="cl100k_base": encoded.append(text) or real(text, encoding))
    import baton.loop.ledger as ledger

    monkeypatch.setattr(ledger, "message_tokens", lambda m, encoding="cl100k_base": tokens.message_tokens(m, encoding))
    big = [{"row": "x" * 50, "n": n} for n in range(200)]
    orchestrator = OrchestratorAgent("o", model=FunctionModel(lambda m, t: LLMResponse(tool_calls=[tool_call("t", {"question": "q"})])))
    orchestrator.add_agent(TableAgent("t", big))
    answer = await orchestrator.ask("q?")
    assert answer.metadata["llm_calls_saved"] == 1
    assert not any("xxxxxxxxxx" in text for text in encoded)  # the rows went nowhere near the tokenizer


async def test_a_passthrough_answer_shares_its_rows_but_not_its_containers():
    kept = []

    class Keeper(TableAgent):
        async def run(self, context, *, question, **kw):
            result = await super().run(context, question=question)
            kept.append(result.ai_message)
            return result

    orchestrator = OrchestratorAgent("o", model=FunctionModel(lambda m, t: LLMResponse(tool_calls=[tool_call("t", {"question": "q"})])))
    orchestrator.add_agent(Keeper("t", [{"unit": "a", "revenue": 1}]))
    answer = await orchestrator.ask("q?")
    (specialist,) = kept
    assert answer.data is not specialist.data and answer.data[0] is specialist.data[0]  # no deep copy of the rows
    assert answer.metadata is not specialist.metadata and "routed_to" not in specialist.metadata
