"""The engine contract: what every registered engine must do, run on each of them.

Every engine in the registry (``baton.specialists.sql.engines.registered()``) gets the same
tests on a real database of its own: the four built-in engines (PostgreSQL and MariaDB from
the test servers, skipped with the reason when their URLs are unset) and "litesql", an engine
that lives only in the tests (``flavour_engine.py``), registered without touching any file of
Baton. A new engine without a case here fails ``test_every_registered_engine_has_a_case``.

The contract, all through Baton's public paths: the engine answers to its names; a query
returns its rows with a type per column, bounded by the row and byte caps; the engine alone
(the parser check bypassed) refuses writes and nothing changes; its errors are classified;
EXPLAIN finds a full scan; introspection lists the tables; the full path refuses unsafe SQL;
and the SQL specialist answers a question on it, repairing a wrong column.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlglot

from baton.agents import AgentContext
from baton.events import RecordingTracker
from baton.llm.testing import ScriptedModel, tool_call
from baton.messages import LLMResponse
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.classify import ErrorClass, SQLExecutionError
from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.engines import engine_for_backend, engine_named, registered
from baton.specialists.sql.explain import check_plan
from baton.specialists.sql.safety import UnsafeQueryError
from flavour_engine import litesql_registered
from sql_test_databases import TestDB, make_db  # noqa: F401  (fixture)

SHOP = (
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(100), city VARCHAR(100))",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount INTEGER)",
    "INSERT INTO customers VALUES (1, 'Ada', 'London'), (2, 'Bo', 'Oslo'), (3, 'Cy', 'Rome')",
    "INSERT INTO orders VALUES " + ", ".join(f"({i}, {i % 3 + 1}, {i * 10})" for i in range(1, 301)),
)
SLOW = {  # a statement that runs past a 0.3 s statement timeout
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
    "duckdb": "SELECT COUNT(*) FROM range(1000000000000) a WHERE a.range % 7 = 3",
    "postgres": "SELECT pg_sleep(5)",
    "mysql": "SELECT SLEEP(5)",
}
BUILT_IN = ("sqlite", "duckdb", "postgres", "mysql")
CASES = (*BUILT_IN, "litesql")


@pytest.fixture
def engine_db(request, make_db, tmp_path: Path) -> Iterator[Callable[..., TestDB]]:
    """``engine_db(name)``: the shop database on engine ``name``."""
    with contextlib.ExitStack() as stack:
        def make(name: str) -> TestDB:
            if name in BUILT_IN:
                return make_db(name, *SHOP)
            stack.enter_context(litesql_registered())
            path = tmp_path / f"shop_{uuid.uuid4().hex[:8]}.db"
            db = TestDB(name, f"litesql:///{path}", f"sqlite:///{path}")
            stack.callback(db.close_connections)
            db.run(*SHOP)
            return db

        yield make


def slow_sql(name: str) -> str:
    return SLOW.get(name, SLOW["sqlite"])  # litesql is SQLite underneath


def test_every_registered_engine_has_a_case():
    with litesql_registered():
        names = {engine.name for engine in registered()}
    assert names == set(CASES), "an engine without a contract case (add it to CASES and engine_db)"


@pytest.mark.parametrize("name", CASES)
async def test_the_engine_answers_to_its_names_and_urls(engine_db, name):
    db = engine_db(name)
    conn = db.connection()
    engine = conn.kind
    assert engine.name == name == conn.dialect
    for spelling in (engine.name, *engine.aliases, *engine.backends):
        assert engine_named(spelling) is engine
        assert engine_named(spelling.upper()) is engine
    for backend in engine.backends:
        assert engine_for_backend(backend) is engine
    assert sqlglot.Dialect.get_or_raise(engine.name)  # the SQL specialist parses with sqlglot
    assert engine.default_schema(conn) in engine.readable_schemas(conn) or engine.default_schema(conn) is None


@pytest.mark.parametrize("name", CASES)
async def test_a_query_returns_typed_rows_within_the_caps(engine_db, name):
    db = engine_db(name)
    conn = db.connection(row_cap=2)
    result = await conn.query("SELECT id, name FROM customers ORDER BY id")
    assert result.rows == [[1, "Ada"], [2, "Bo"]] and result.truncated
    assert result.columns == ["id", "name"] and len(result.column_types) == 2 and all(result.column_types)
    small = await conn.query("SELECT name FROM customers ORDER BY id", byte_cap=4)
    assert small.truncated and small.rows == [["Ada"]]
    whole = await db.connection().query("SELECT COUNT(*) AS n FROM orders")
    assert whole.rows == [[300]] and not whole.truncated


@pytest.mark.parametrize("name", CASES)
async def test_the_engine_alone_refuses_writes(engine_db, name):
    """The parser check bypassed, as the administrator: the engine's guard is what refuses."""
    db = engine_db(name)
    before = db.checksum()
    conn = db.connection(allow_privileged_role=True)
    for sql in ("INSERT INTO customers VALUES (9, 'Eve', 'Paris')", "UPDATE orders SET amount = 0",
                "DELETE FROM orders", "DROP TABLE orders", "CREATE TABLE intruder (id INTEGER)"):
        with pytest.raises(SQLExecutionError) as caught:
            await conn.execute_readonly(sql)
        assert caught.value.error_class in (ErrorClass.PERMISSION_DENIED, ErrorClass.SYNTAX_ERROR, ErrorClass.OTHER), sql
    assert db.checksum() == before
    assert (await conn.execute_readonly("SELECT COUNT(*) FROM customers")).rows == [[3]]  # still usable


@pytest.mark.parametrize("name", CASES)
async def test_errors_are_classified(engine_db, name):
    db = engine_db(name)
    conn = db.connection(statement_timeout_s=0.3, connection_retries=0)
    cases = {
        "SELECT * FROM custmers": ErrorClass.TABLE_NOT_FOUND,
        "SELECT nme FROM customers": ErrorClass.COLUMN_NOT_FOUND,
        "SELEC name FROM customers": ErrorClass.SYNTAX_ERROR,
        slow_sql(name): ErrorClass.TIMEOUT,
    }
    for sql, expected in cases.items():
        with pytest.raises(SQLExecutionError) as caught:
            await conn.execute_readonly(sql)
        assert caught.value.error_class is expected, (sql, caught.value.error)
        assert caught.value.error.code
    assert (await conn.execute_readonly("SELECT COUNT(*) FROM orders")).rows == [[300]]


@pytest.mark.parametrize("name", CASES)
async def test_explain_finds_a_full_scan_and_introspection_lists_the_tables(engine_db, name):
    db = engine_db(name)
    if name == "postgres":
        db.run("ANALYZE orders")
    conn = db.connection(explain=True, full_scan_row_threshold=100)
    schema = await conn.schema()
    assert {"customers", "orders"} <= set(schema.tables)
    assert {c.name for c in schema.table("orders").columns} == {"id", "customer_id", "amount"}
    plan = await check_plan(conn, "SELECT SUM(amount) FROM orders WHERE amount > 5", schema)
    assert "orders" in [scan.table for scan in plan.scans]


@pytest.mark.parametrize("name", CASES)
async def test_the_full_path_refuses_unsafe_sql(engine_db, name):
    db = engine_db(name)
    before = db.checksum()
    conn = db.connection()
    for sql in ("DROP TABLE orders", "SELECT 1; DELETE FROM orders", "UPDATE orders SET amount = 0"):
        with pytest.raises(UnsafeQueryError):
            await conn.query(sql)
    assert db.checksum() == before


@pytest.mark.parametrize("name", CASES)
async def test_the_sql_specialist_answers_on_the_engine(engine_db, name):
    db = engine_db(name)
    model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT c.nme, COUNT(*) AS n FROM customers c "
                                                              "JOIN orders o ON o.customer_id = c.id GROUP BY c.nme"})]),
        LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT c.name, COUNT(*) AS n FROM customers c JOIN orders o "
                                                              "ON o.customer_id = c.id GROUP BY c.name ORDER BY c.name"})]),
        "Each customer has 100 orders.",
    ])
    context = AgentContext(user_question="", llm_router=model, tracker=RecordingTracker())
    result = await SQLAgent(db.connection()).run(context, question="How many orders per customer?")
    assert result.status == "success", result.error
    assert [a.outcome for a in result.attempts] == ["invalid", "success"]
    assert result.attempts[0].error_class == "column_not_found"
    assert result.ai_message.data == [{"name": "Ada", "n": 100}, {"name": "Bo", "n": 100}, {"name": "Cy", "n": 100}]


def test_the_adding_an_engine_page_names_every_member():
    """docs/how-to/adding-an-engine.md lists what an engine is; it cannot fall behind base.py."""
    from baton.specialists.sql.engines.base import Engine

    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "adding-an-engine.md").read_text(encoding="utf-8")
    members = {name for name in (*vars(Engine), *Engine.__annotations__) if not name.startswith("_")}
    missing = sorted(name for name in members if f"`{name}`" not in page)
    assert not missing, f"members of Engine the page does not name: {missing}"


def test_registering_over_an_engine_needs_replace():
    """A built-in engine is never swapped out silently (its guard is what keeps queries read-only)."""
    from baton.errors import ConfigurationError
    from baton.specialists.sql.engines import register
    from baton.specialists.sql.engines.sqlite import ENGINE as SQLITE
    from baton.specialists.sql.engines.sqlite import SQLiteEngine
    from flavour_engine import LitesqlEngine

    class Impostor(SQLiteEngine):
        pass

    with pytest.raises(ConfigurationError, match="sqlite"):
        register(Impostor())
    assert engine_named("sqlite") is SQLITE
    with litesql_registered() as litesql:
        with pytest.raises(ConfigurationError, match="lite"):
            register(LitesqlEngine())  # the same name, another instance
        assert engine_named("lite") is litesql
        try:
            impostor = register(Impostor(), replace=True)
            assert engine_named("sqlite3") is impostor and engine_named("sqlite") is impostor
        finally:
            register(SQLITE, replace=True)
    assert engine_named("sqlite3") is SQLITE and engine_named("sqlite") is SQLITE


def test_an_unknown_engine_is_refused_by_name():
    from baton.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="snowflake"):
        SQLConnection("snowflake://user@account/db")
    with pytest.raises(ConfigurationError, match="litesql"):
        engine_named("litesql")  # not registered outside its context
