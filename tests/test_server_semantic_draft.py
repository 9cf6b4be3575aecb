"""The page's "Draft a semantic model" (issue 28): for a workspace with a database and no
semantic model, ``POST /v1/semantic/draft`` returns what ``baton semantic init`` writes — a
model that loads and answers, what it decided and what to check — and changes nothing in the
running workspace; a workspace that has a model, or no database, is refused by name."""

from __future__ import annotations

import sqlite3

import httpx
import yaml

from baton.agents import OrchestratorAgent
from baton.semantic.native import model_from_dict
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.state.location import State
from baton.workspace.database import open_database_workspace

KEY, BARE = "bt_draft_key", "bt_bare_key"


def shop_database(path) -> str:
    """A small SQLite shop (customers, orders) with no semantic model; its URL."""
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, country TEXT);
            CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(customer_id),
                                 ordered_at TEXT, amount REAL);
        """)
        db.executemany("INSERT INTO customers VALUES (?, ?, ?)",
                       [(i, f"Customer {i}", ("Germany", "France", "Italy")[i % 3]) for i in range(1, 31)])
        db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)",
                       [(i, 1 + i % 30, f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}", 10.0 + i) for i in range(1, 201)])
    return f"sqlite:///{path}"


async def test_a_workspace_without_a_model_is_offered_a_draft_that_loads(tmp_path):
    url = shop_database(tmp_path / "shop.sqlite")
    state = State.from_env(env={}, home=tmp_path / "home")
    async with open_database_workspace(url, None, state=state, name="shop") as ws:
        bare = Workspace("bare", OrchestratorAgent("bare"), SessionStore())
        app = create_app(Workspaces([ws, bare]), ApiKeys({KEY: "shop", BARE: "bare"}))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            examples = (await client.get("/v1/examples", headers={"Authorization": f"Bearer {KEY}"})).json()
            assert examples["can_draft_semantic"] is True
            response = await client.post("/v1/semantic/draft", headers={"Authorization": f"Bearer {KEY}"})
            assert response.status_code == 200, response.text
            body = response.json()
            model = model_from_dict(yaml.safe_load(body["yaml"]))  # the YAML a user downloads loads as a model
            assert {m.name for m in model.metrics} >= {"orders", "customers"}
            assert body["decisions"] and isinstance(body["checklist"], list)
            assert "--semantic" in body["command"] and url not in body["command"]  # no database URL echoed
            assert getattr(ws, "semantic", None) is None  # the running workspace is unchanged

            refused = await client.post("/v1/semantic/draft", headers={"Authorization": f"Bearer {BARE}"})
            assert refused.status_code == 422 and refused.json()["error_code"] == "no_database"
            bare_examples = (await client.get("/v1/examples", headers={"Authorization": f"Bearer {BARE}"})).json()
            assert bare_examples["can_draft_semantic"] is False
            unauthenticated = await client.post("/v1/semantic/draft")
            assert unauthenticated.status_code == 401


async def test_a_workspace_with_a_model_is_not_offered_one(tmp_path):
    from baton.demo.data import build_demo_database
    from baton.demo.workspace import build_demo_workspace

    build_demo_database(tmp_path / "finance.sqlite", sales_rows=500)
    demo = build_demo_workspace(tmp_path)
    try:
        app = create_app(Workspaces([demo]), ApiKeys({KEY: "demo"}))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            examples = (await client.get("/v1/examples", headers={"Authorization": f"Bearer {KEY}"})).json()
            assert examples["can_draft_semantic"] is False
            response = await client.post("/v1/semantic/draft", headers={"Authorization": f"Bearer {KEY}"})
            assert response.status_code == 409 and response.json()["error_code"] == "semantic_model_exists"
    finally:
        await demo.aclose()
