"""The workspace's ``Catalog`` (issue 30, item 3): its specialists sorted by what they can do
(``baton.agents.capabilities``), its databases, semantic layer and the ONE set of verified
questions that the orchestrator, the no-model router and the SQL specialists all read.
The demo workspace on real SQLite; no model, or ScriptedModel."""

from __future__ import annotations

import sqlite3

import pytest

from baton.agents import OrchestratorAgent
from baton.agents.capabilities import AnswersWithoutModel, HasDocumentIndex, HasSemanticLayer, OffersTools, RunsSQL
from baton.agents.lexical_routing import LexicalRouter
from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.llm import ScriptedModel
from baton.specialists.mcp import MCPAgent
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.connection import SQLConnection
from baton.verified import VerifiedQuestion, VerifiedSet
from baton.workspace.core import Workspace
from baton.workspace.verified import install_verified, installed, save_verified_question


@pytest.fixture
def demo_dir(tmp_path):
    build_demo_database(tmp_path / "finance.sqlite", sales_rows=300)
    return tmp_path


async def test_the_demo_catalog_lists_its_specialists_by_what_they_can_do(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        catalog = ws.catalog
        kinds = {s.name: s.kind for s in catalog.specialists()}
        assert kinds == {"pokemon_finance": "SQLAgent", "epson_finance": "SQLAgent", "roadshows_finance": "SQLAgent",
                         "general_finance": "SQLAgent", "finance_docs": "FolderKnowledgeAgent", "metrics": "SemanticAgent"}
        assert [a.name for a in catalog.sql_specialists()] == ["pokemon_finance", "epson_finance", "roadshows_finance",
                                                               "general_finance"]
        assert all(isinstance(a, RunsSQL) for a in catalog.sql_specialists())
        assert catalog.document_names() == {"finance_docs"}
        assert [f.name for f in catalog.document_folders()] == ["doctrine"]
        [database] = catalog.databases()  # four specialists, one connection
        assert database.id == "demo" and catalog.connection("demo") is database
        agent, layer = catalog.semantic_answerer()
        assert agent.name == "metrics" and layer is ws.semantic is catalog.semantic
        assert isinstance(agent, HasSemanticLayer) and isinstance(agent, AnswersWithoutModel)
        assert not isinstance(agent, RunsSQL) and not isinstance(catalog.specialist("finance_docs").agent, RunsSQL)
        assert isinstance(catalog.specialist("finance_docs").agent, HasDocumentIndex)
        listed = {d["name"]: d for d in catalog.listing()}
        assert listed["epson_finance"]["tool"] == "epson_finance" and listed["epson_finance"]["description"]
        assert catalog.name_taken("epson_finance") and catalog.name_taken("epson finance")  # its tool name
        assert not catalog.name_taken("weather")
        assert not catalog.routes_with_model()


async def test_one_verified_set_is_read_by_the_orchestrator_the_router_and_each_sql_specialist(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        one = ws.catalog.verified
        router = ws.orchestrator.model
        assert isinstance(router, LexicalRouter)
        assert ws.orchestrator.verified_set is one and router.verified_set is one
        for agent in ws.catalog.sql_specialists():
            assert agent.verified == tuple(v for v in one if v.agent == agent.name)
        assert installed(ws) == one.questions == ws.orchestrator.verified == router.verified
        before = len(one)
        question = "How many Epson sales transactions are recorded?"
        saved = await save_verified_question(ws, question, "SELECT COUNT(*) AS n FROM sales_transactions WHERE unit_id = 2",
                                             agent="epson_finance")
        assert len(one) == before + 1 and ws.catalog.verified is one  # the same set, replaced in one assignment
        assert saved in ws.orchestrator.verified and saved in router.verified
        assert saved in ws.catalog.specialist("epson_finance").agent.verified
        assert saved not in ws.catalog.specialist("pokemon_finance").agent.verified
        answer = await ws.answer(question)
        assert answer.metadata["fast_path"] == "verified_question" and answer.metadata["routed_to"] == "epson_finance"


async def test_the_catalog_follows_the_line_up_and_a_late_sql_specialist_joins_the_set(tmp_path):
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
    connection = SQLConnection(f"sqlite:///{path}", id="shop")
    orchestrator = OrchestratorAgent("o", model=LexicalRouter(catalog=True))
    ws = Workspace("shop", orchestrator)
    ws.own(connection.aclose)
    async with ws:
        assert ws.catalog.specialists() == () and ws.catalog.databases() == []
        first = SQLAgent(connection, name="first")
        orchestrator.add_agent(first)
        question = VerifiedQuestion("How many rows are in t?", "SELECT COUNT(*) AS n FROM t", "")
        install_verified(ws, [question])
        assert [v.agent for v in installed(ws)] == ["first"]  # no owner named: the only SQL specialist's
        assert first.verified == installed(ws)
        second = SQLAgent(connection, name="second", verified=[VerifiedQuestion("own", "SELECT 1", "second")])
        orchestrator.add_agent(second)
        assert [a.name for a in ws.catalog.sql_specialists()] == ["first", "second"]  # seen at once (the revision)
        assert second.verified == ()  # it joined the workspace's set, where it owns nothing
        answer = await ws.answer("how many rows are in t")
        assert answer.data == [{"n": 2}] and answer.metadata["llm_calls"] == 0
        orchestrator.remove_agent("second")
        assert [a.name for a in ws.catalog.sql_specialists()] == ["first"]


def test_an_agent_outside_a_workspace_keeps_its_own_questions():
    connection = SQLConnection("sqlite://", id="mem")
    own = VerifiedQuestion("How many?", "SELECT 1", "sql")
    agent = SQLAgent(connection, verified=[own])
    assert agent.verified == (own,)
    shared = VerifiedSet([own, VerifiedQuestion("Other?", "SELECT 2", "x")])
    agent.share_verified(shared)
    assert agent.verified == (own,)  # its own questions of the shared set
    agent.verified = ()
    assert agent.verified == () and len(shared) == 2  # assigning detaches: the shared set is untouched
    connection.close()


def test_an_mcp_specialist_offers_its_tools_and_a_taken_name_is_seen():
    orchestrator = OrchestratorAgent("o", model=ScriptedModel([]))
    ws = Workspace("w", orchestrator)
    agent = MCPAgent("weather", ["python", "-c", "pass"], allowed_tools=["forecast", "alerts"])
    assert isinstance(agent, OffersTools) and not isinstance(agent, RunsSQL)
    orchestrator.add_agent(agent)
    [entry] = ws.catalog.listing()
    assert entry["kind"] == "MCPAgent" and entry["tools"] == ["forecast", "alerts"]
    assert ws.catalog.name_taken("weather") and ws.catalog.routes_with_model()


def test_workspace_semantic_vocabulary_and_document_examples_live_in_the_catalog():
    ws = Workspace("w", OrchestratorAgent("o", model=LexicalRouter()))
    marker = object()
    ws.semantic = marker
    ws.document_examples = ["What is a roadshow?"]
    assert ws.catalog.semantic is marker and ws.catalog.document_examples == ("What is a roadshow?",)
    assert ws.vocabulary is None
