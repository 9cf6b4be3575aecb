"""Which tables the SQL specialist shows its model (issue 23): remembered co-usage and named values rank
tables up, on a real database, seen in the prompt the model receives."""

from __future__ import annotations

import asyncio

from baton.llm import FunctionModel
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.memory_port import MemoryBundle
from sql_test_databases import make_db  # noqa: F401  (fixture)

TABLES = ["CREATE TABLE orders (id INTEGER PRIMARY KEY, zone TEXT, amount INTEGER)",
          "CREATE TABLE territories (code TEXT PRIMARY KEY, title TEXT)",  # no word or key in common with the questions
          "INSERT INTO territories VALUES ('DE', 'Germany'), ('FR', 'France')",
          *(f"CREATE TABLE audit_log_{i} (entry INTEGER, note TEXT)" for i in range(30)),
          *(f"INSERT INTO audit_log_{i} VALUES (1, 'a'), (2, 'b'), (3, 'c')" for i in range(30))]  # bigger: shown first


class RememberedTables:
    """A memory whose bundle says which tables a verified query used together."""

    def __init__(self, tables: tuple[str, ...]) -> None:
        self.tables = tables

    async def bundle_for(self, question: str, connection_id: str) -> MemoryBundle:
        return MemoryBundle("", None, (), self.tables)

    async def record_learnings(self, learnings) -> None:
        return None

    async def record_validation(self, **kwargs) -> None:
        return None


async def _prompt(connection: SQLConnection, question: str, memory=None) -> str:
    seen: list[str] = []

    def model(messages, tools):
        seen.append(messages[0].content)
        return "I cannot answer that."

    await SQLAgent(connection, model=FunctionModel(model), memory=memory).ask(question)
    return seen[0]


async def test_tables_a_verified_query_used_together_rank_up(make_db):
    db = make_db("sqlite", *TABLES)
    connection = SQLConnection(db.url)
    try:
        plain = await _prompt(connection, "Total amount of orders per zone?")
        remembered = await _prompt(connection, "Total amount of orders per zone?", RememberedTables(("orders", "territories")))
    finally:
        await connection.aclose()
    assert "TABLE orders" in plain and "TABLE orders" in remembered
    assert "TABLE territories" not in plain
    assert "TABLE territories" in remembered  # the verified query read both: territories is shown
    assert plain.count("TABLE ") == remembered.count("TABLE ") == 12  # the limit, filled either way


async def test_a_value_the_question_names_brings_its_table_once_the_index_is_built(make_db):
    from baton.specialists.sql.value_index import _BUILT

    db = make_db("sqlite", *TABLES)
    connection = SQLConnection(db.url)
    try:
        first = await _prompt(connection, "Amount of orders from Germany?")  # starts the value index in the background
        await asyncio.wait_for(_BUILT[connection][1], 30)
        later = await _prompt(connection, "Amount of orders from Germany?")
    finally:
        await connection.aclose()
    assert "TABLE territories" not in first
    assert "TABLE territories" in later  # 'Germany' is a value of territories.title
    assert first.count("TABLE ") == later.count("TABLE ") == 12
