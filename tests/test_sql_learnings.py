"""The five learning heuristics of seed 002, each from a real failed-then-fixed attempt
sequence on a real database (the agent driven by ScriptedModel), and the deterministic
rewrites a learning enables."""

from __future__ import annotations

from baton.agents import AgentContext
from baton.llm.testing import ScriptedModel
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.learnings import ExtractedLearning, extract_learnings
from baton.specialists.sql.result import QueryAttempt
from baton.specialists.sql.rewrite import apply_learnings
from sql_test_databases import make_db  # noqa: F401  (fixture)
from test_sql_agent import sql_call
from test_sql_engine import SHOP


async def ask(db, script, question, **agent_kw):
    model = ScriptedModel(script)
    conn = agent_kw.pop("connection", None) or db.connection()
    result = await SQLAgent(conn, **agent_kw).run(AgentContext(llm_router=model), question=question)
    assert result.status == "success", result.error
    return result


def triples(result):
    return [(l.category, l.entity, l.attribute, l.value) for l in result.learnings]


async def test_table_preference_from_an_unknown_table(make_db):
    db = make_db("mysql", *SHOP)
    result = await ask(db, [sql_call("SELECT SUM(amount) FROM sales"), sql_call("SELECT SUM(amount) FROM orders"), "6249"],
                       "What is total revenue?")
    assert triples(result) == [("table_preference", "sales", "use_instead", "orders")]
    learning = result.learnings[0]
    assert learning.lesson == "Use `orders` instead of `sales` for what is total revenue."
    assert learning.connection_id == "test-mysql" and learning.tables == ["orders", "sales"]


async def test_table_preference_from_an_empty_table(make_db):
    db = make_db("sqlite", *SHOP, "CREATE TABLE orders_archive (id INTEGER PRIMARY KEY, amount INTEGER)")
    result = await ask(db, [
        sql_call("SELECT id, amount FROM orders_archive WHERE amount > 1000"),
        sql_call("SELECT id, amount FROM orders WHERE amount > 1000"),
        "Two orders.",
    ], "Which orders are over 1000?")
    assert [a.row_count for a in result.attempts] == [0, 2]
    assert triples(result) == [("table_preference", "orders_archive", "use_instead", "orders")]


async def test_column_correction_from_the_engine(make_db):
    db = make_db("postgres", *SHOP)
    result = await ask(db, [
        sql_call("SELECT o.id, o.total FROM orders o WHERE o.customer_id = 1"),
        sql_call("SELECT o.id, o.amount FROM orders o WHERE o.customer_id = 1"),
        "Two orders.",
    ], "Order totals for customer 1")
    assert result.attempts[0].error_class == "column_not_found"
    assert triples(result) == [("column_correction", "orders.total", "correct_column", "amount")]
    assert result.learnings[0].lesson == "Column `total` doesn't exist on `orders`. Use `amount` instead."


async def test_unit_divisor_discovered_from_a_result(make_db):
    db = make_db("duckdb", *SHOP)
    result = await ask(db, [
        sql_call("SELECT SUM(amount) AS revenue FROM orders"),
        sql_call("SELECT SUM(amount) / 100.0 AS revenue FROM orders", "amount is in cents"),
        "Revenue is 62.49.",
    ], "What is total revenue in dollars?")
    assert [a.result_preview for a in result.attempts] == [[[6249]], [[62.49]]]
    assert triples(result) == [("format_discovery", "orders.amount", "unit", "cents")]
    assert "Divide by 100" in result.learnings[0].lesson or "divide by 100" in result.learnings[0].lesson


async def test_soft_delete_learned_then_applied_by_rewrite(make_db):
    db = make_db("sqlite", *SHOP)
    result = await ask(db, [
        sql_call("SELECT COUNT(*) AS n FROM customers"),
        sql_call("SELECT COUNT(*) AS n FROM customers WHERE deleted_at IS NULL", "exclude deleted customers"),
        "2 active customers.",
    ], "How many customers do we have?")
    assert triples(result) == [("schema_gotcha", "customers", "soft_delete_filter", "deleted_at IS NULL")]
    # the next request, with that learning active, gets the filter even when the model forgets it
    later = await ask(db, [sql_call("SELECT city FROM customers ORDER BY city"), "London and Oslo."],
                      "Which cities have customers?", learnings=result.learnings)
    assert later.results.rows == [["London"], ["Oslo"]]
    assert later.attempts[0].rewrites == ["soft_delete:customers.deleted_at"]


async def test_schema_prefix_learned_from_the_engine(make_db):
    db = make_db("duckdb", "CREATE SCHEMA analytics", "CREATE TABLE analytics.events (id INTEGER, kind VARCHAR)",
                 "INSERT INTO analytics.events VALUES (1, 'click'), (2, 'view')")
    conn = db.connection(allowed_schemas=("analytics",))  # the workspace may read analytics; main is its own
    result = await ask(db, [sql_call("SELECT COUNT(*) FROM events"), sql_call("SELECT COUNT(*) FROM analytics.events"), "2"],
                       "How many events?", connection=conn)
    assert result.attempts[0].error_class == "table_not_found"  # the engine said so: main has no tables
    assert triples(result) == [("schema_gotcha", "events", "schema", "analytics")]
    later = await ask(db, [sql_call("SELECT kind FROM events ORDER BY kind"), "click, view"], "Event kinds?",
                      learnings=result.learnings, connection=conn)
    assert later.results.rows == [["click"], ["view"]] and later.attempts[0].rewrites == ["schema_prefix:analytics.events"]


async def test_performance_hint_from_a_real_timeout(make_db):
    db = make_db(
        "postgres",
        "CREATE TABLE events (id INTEGER PRIMARY KEY, v INTEGER, created_at DATE)",
        "INSERT INTO events SELECT g, (g * 7919) %% 20000, DATE '2024-01-01' + (g %% 300) FROM generate_series(1, 20000) g",
        "ANALYZE events",
    )
    slow = "SELECT e.id, (SELECT COUNT(*) FROM events b WHERE b.v < e.v) AS rank FROM events e"
    fixed = slow + " WHERE e.created_at >= DATE '2024-10-01' ORDER BY e.id LIMIT 5"
    conn = db.connection(statement_timeout_s=0.3)
    result = await ask(db, [sql_call(slow), sql_call(fixed), "Ranks computed."], "Rank events by v", connection=conn)
    assert [a.error_class for a in result.attempts] == ["timeout", None]
    assert triples(result) == [("performance_hint", "events", "requires", "limit+date_filter")]
    assert result.learnings[0].lesson == "Table `events` can time out. Always add LIMIT and a date filter."
    # applied later: a query on events without LIMIT gets one (row cap + 1), so the engine can stop early
    rewrite = apply_learnings("SELECT id FROM events", result.learnings, "postgres", row_cap=100)
    assert rewrite.sql == "SELECT id FROM events LIMIT 101"


def test_no_learning_without_a_fix():
    ok = QueryAttempt(1, "SELECT a FROM t", "success", row_count=3)
    also_ok = QueryAttempt(2, "SELECT b FROM u", "success", row_count=3)
    syntax = QueryAttempt(1, "SELEC a FROM t", "error", error_class="syntax_error")
    assert extract_learnings([ok], "q", "c", "sqlite") == []
    # exploring a second table after a success is not a table preference
    assert extract_learnings([ok, also_ok], "q", "c", "sqlite") == []
    # a failure fixed by the same tables teaches nothing either
    assert extract_learnings([syntax, QueryAttempt(2, "SELECT a FROM t", "success", row_count=1)], "q", "c", "sqlite") == []
    # a failed final attempt: nothing was fixed
    assert extract_learnings([syntax, QueryAttempt(2, "SELECT a FROM u", "error", error_class="table_not_found")], "q", "c", "sqlite") == []


def test_learning_has_the_contradiction_gate_fields():
    attempts = [QueryAttempt(1, "SELECT SUM(amount) FROM orders", "success", row_count=1),
                QueryAttempt(2, "SELECT SUM(o.amount) / 1000 FROM orders o", "success", row_count=1)]
    [learning] = extract_learnings(attempts, "revenue", "conn-1", "postgres")
    assert isinstance(learning, ExtractedLearning)
    assert (learning.entity, learning.attribute, learning.value, learning.connection_id) == ("orders.amount", "unit", "thousandths", "conn-1")
    assert learning.tables == ["orders"] and learning.columns == ["amount"]


def test_rewrites_respect_outer_joins_existing_filters_and_ctes():
    soft = ExtractedLearning("schema_gotcha", "", entity="customers", attribute="soft_delete_filter", value="deleted_at IS NULL")
    left = apply_learnings("SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON c.id = o.customer_id", [soft], "postgres")
    assert left.sql == "SELECT o.id, c.name FROM orders AS o LEFT JOIN customers AS c ON c.id = o.customer_id AND c.deleted_at IS NULL"
    already = apply_learnings("SELECT * FROM customers WHERE deleted_at IS NOT NULL", [soft], "postgres")
    assert not already.changed  # the model asked for deleted rows on purpose
    nested = apply_learnings("SELECT n FROM (SELECT COUNT(*) AS n FROM customers) s", [soft], "sqlite")
    assert nested.sql == "SELECT n FROM (SELECT COUNT(*) AS n FROM customers WHERE customers.deleted_at IS NULL) AS s"
    assert not apply_learnings("SELECT * FROM orders", [soft], "sqlite").changed
    assert not apply_learnings("not sql at all (", [soft], "sqlite").changed
