"""Pre-validation against real engines: every name it flags is one the real database rejects
too, and every query it passes (CTEs, aliases, correlated subqueries, USING joins, ...) runs
on the real database, in each of the four dialects.

SQLite and DuckDB run in process; PostgreSQL and MariaDB use the local test servers (a
uniquely named schema / database, dropped afterwards) and skip when their URL is unset.
"""

from __future__ import annotations

import os
import re
import sqlite3
import uuid

import duckdb
import pytest

from baton.specialists.sql.engines import UnsupportedDialectError
from baton.specialists.sql.prevalidate import SchemaIssue, format_issues_for_repair, prevalidate
from baton.specialists.sql.schema import ColumnInfo, SchemaInfo, TableInfo

SHOP = {
    "customers": ["id", "name", "email", "created_at"],
    "orders": ["id", "customer_id", "total", "status", "created_at"],
    "order_items": ["order_id", "product_id", "qty"],
    "products": ["id", "name", "price"],
}
DDL = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(50), email VARCHAR(50), created_at DATE)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total DECIMAL(10,2), status VARCHAR(20), "
    "created_at DATE)",
    "CREATE TABLE order_items (order_id INTEGER, product_id INTEGER, qty INTEGER)",
    "CREATE TABLE products (id INTEGER PRIMARY KEY, name VARCHAR(50), price DECIMAL(10,2))",
    "INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com', '2024-01-02'), (2, 'Bo', 'ada@example.com', '2024-02-03')",
    "INSERT INTO orders VALUES (10, 1, 30.00, 'paid', '2024-03-01'), (11, 2, 5.50, 'open', '2024-03-02')",
    "INSERT INTO order_items VALUES (10, 100, 2), (10, 101, 1), (11, 100, 1)",
    "INSERT INTO products VALUES (100, 'Tea', 10.00), (101, 'Cup', 10.00)",
]


def shop_schema(dialect: str) -> SchemaInfo:
    schema = SchemaInfo(dialect)
    for table, columns in SHOP.items():
        schema.add(TableInfo(table, [ColumnInfo(c) for c in columns]))
    return schema


# Queries that are right: no issue, and the real engine runs them.
CLEAN = [
    "WITH big AS (SELECT customer_id, SUM(total) AS spent FROM orders GROUP BY customer_id) "
    "SELECT c.name, b.spent FROM customers c JOIN big b ON b.customer_id = c.id ORDER BY spent DESC",
    "SELECT d.n FROM (SELECT status, COUNT(*) AS n FROM orders GROUP BY status) AS d WHERE d.n > 0",
    "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id AND qty > 1)",
    "SELECT status AS s, COUNT(*) AS n FROM orders GROUP BY status ORDER BY n",
    "SELECT order_id, qty FROM order_items JOIN (SELECT id AS order_id FROM orders) AS o USING (order_id)",
    "SELECT a.id, b.id FROM customers a JOIN customers b ON a.email = b.email AND a.id < b.id",
    "WITH c AS (SELECT * FROM customers) SELECT c.email FROM c",
    "SELECT name FROM customers UNION SELECT name FROM products ORDER BY name",
    "SELECT p.name, (SELECT SUM(qty) FROM order_items i WHERE i.product_id = p.id) AS sold FROM products p",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",
    "WITH x(total, state) AS (SELECT total, status FROM orders) SELECT x.total FROM x WHERE x.state = 'paid'",
    "SELECT c.name, COUNT(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.name",
]

# Queries with wrong names: (sql, expected issues as (kind, name, table, best suggestion)).
BROKEN = [
    ("SELECT name FROM customer",
     {("unknown_table", "customer", None, "customers")}),
    ("SELECT c.nme, c.emial, o.totl FROM customers c JOIN orders o ON o.customer_id = c.id",
     {("unknown_column", "nme", "customers", "name"), ("unknown_column", "emial", "customers", "email"),
      ("unknown_column", "totl", "orders", "total")}),
    ("SELECT id, name FROM customers JOIN orders ON orders.customer_id = customers.id",
     {("ambiguous_column", "id", None, "customers.id")}),
    ("WITH c AS (SELECT id, name FROM customers) SELECT c.email FROM c",
     {("unknown_column", "email", "c", "customers.email")}),
    ("SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id AND qtty > 1)",
     {("unknown_column", "qtty", "order_items", "qty")}),
    ("SELECT email FROM orders",
     {("unknown_column", "email", "orders", "customers.email")}),
    ("SELECT o.totl FROM orders o JOIN custmers c ON c.id = o.customer_id",
     {("unknown_table", "custmers", None, "customers"), ("unknown_column", "totl", "orders", "total")}),
    ("SELECT z.id FROM orders o",
     {("unknown_table", "z", None, None)}),
]


def _key(issue: SchemaIssue):
    return (issue.kind, issue.name, issue.table, issue.suggestions[0] if issue.suggestions else None)


# --- real engines -------------------------------------------------------------------------


class _Engine:
    """A real database with the shop tables. ``name_errors`` are the driver's error classes for
    a statement it refuses, and ``is_name_error`` tells a refusal for a wrong name (unknown
    table or column, ambiguous column) from any other refusal of that class."""

    def __init__(self, dialect, run, close, name_errors, is_name_error):
        self.dialect, self.run, self.close = dialect, run, close
        self.name_errors, self.is_name_error = name_errors, is_name_error


_SQLITE_NAME_ERROR = re.compile(r"^(no such table|no such column|ambiguous column name): ")
# PostgreSQL's SQLSTATEs for a wrong name: undefined_table, undefined_column, ambiguous_column.
_POSTGRES_NAME_ERRORS = ("42P01", "42703", "42702")
# MariaDB's: ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR (unknown column), ER_NON_UNIQ_ERROR (ambiguous).
_MYSQL_NAME_ERRORS = (1146, 1054, 1052)


def _sqlite():
    connection = sqlite3.connect(":memory:")
    for statement in DDL:
        connection.execute(statement)
    return _Engine("sqlite", lambda sql: connection.execute(sql).fetchall(), connection.close,
                   (sqlite3.OperationalError,), lambda error: bool(_SQLITE_NAME_ERROR.match(str(error))))


def _duckdb():
    connection = duckdb.connect()
    for statement in DDL:
        connection.execute(statement)
    # CatalogException: no such table; BinderException: no such column or table alias, ambiguous column.
    return _Engine("duckdb", lambda sql: connection.execute(sql).fetchall(), connection.close,
                   (duckdb.CatalogException, duckdb.BinderException), lambda error: True)


def _server(dialect: str, variable: str):
    url = os.environ.get(variable)
    if not url:
        pytest.skip(f"{variable} is not set: this test needs that database server")
    import sqlalchemy

    name = f"prevalidate_{uuid.uuid4().hex[:10]}"
    admin = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f"CREATE {'SCHEMA' if dialect == 'postgres' else 'DATABASE'} {name}")
    if dialect == "postgres":
        engine = sqlalchemy.create_engine(url, connect_args={"options": f"-csearch_path={name}"})
    else:
        engine = sqlalchemy.create_engine(sqlalchemy.make_url(url).set(database=name))
    with engine.begin() as connection:
        for statement in DDL:
            connection.exec_driver_sql(statement)

    def run(sql):
        with engine.connect() as connection:
            try:
                return connection.exec_driver_sql(sql).fetchall()
            except sqlalchemy.exc.DBAPIError as error:
                raise error.orig from error  # the driver's own error: its SQLSTATE or error number

    def close():
        engine.dispose()
        with admin.connect() as connection:
            drop = f"DROP SCHEMA {name} CASCADE" if dialect == "postgres" else f"DROP DATABASE {name}"
            connection.exec_driver_sql(drop)
        admin.dispose()

    if dialect == "postgres":
        import psycopg

        return _Engine(dialect, run, close, (psycopg.errors.ProgrammingError,),
                       lambda error: error.sqlstate in _POSTGRES_NAME_ERRORS)
    import pymysql

    return _Engine(dialect, run, close, (pymysql.err.ProgrammingError, pymysql.err.OperationalError),
                   lambda error: error.args[0] in _MYSQL_NAME_ERRORS)


@pytest.fixture(scope="module", params=["sqlite", "duckdb", "postgres", "mysql"])
def engine(request):
    makers = {"sqlite": _sqlite, "duckdb": _duckdb,
              "postgres": lambda: _server("postgres", "BATON_TEST_POSTGRES_URL"),
              "mysql": lambda: _server("mysql", "BATON_TEST_MYSQL_URL")}
    made = makers[request.param]()
    yield made
    made.close()


@pytest.mark.parametrize("sql", CLEAN, ids=[f"clean{i}" for i in range(len(CLEAN))])
def test_correct_query_has_no_issue_and_runs(engine, sql):
    assert prevalidate(sql, shop_schema(engine.dialect), engine.dialect) == []
    engine.run(sql)  # the real engine agrees the names are right


@pytest.mark.parametrize(("sql", "expected"), BROKEN, ids=[f"broken{i}" for i in range(len(BROKEN))])
def test_wrong_names_are_all_reported_and_the_engine_rejects_them_too(engine, sql, expected):
    issues = prevalidate(sql, shop_schema(engine.dialect), engine.dialect)
    assert {_key(i) for i in issues} == expected
    assert all(i.message for i in issues)
    with pytest.raises(engine.name_errors) as refused:
        engine.run(sql)
    assert engine.is_name_error(refused.value), refused.value  # refused for a wrong name, not anything else
    named = [i.name for i in issues if re.search(rf"\b{re.escape(i.name)}\b", str(refused.value))]
    assert named, f"{engine.dialect} refused for a name we did not flag: {refused.value}"


# --- without an engine --------------------------------------------------------------------


def test_all_unknown_columns_are_reported_at_once_in_order():
    sql = "SELECT nam, emai, creatd FROM customers"
    issues = prevalidate(sql, shop_schema("postgres"), "postgres")
    assert [(i.name, i.suggestions[:1]) for i in issues] == [("nam", ["name"]), ("emai", ["email"]),
                                                             ("creatd", ["created_at"])]


def test_repair_text_lists_every_issue_with_did_you_mean():
    issues = prevalidate("SELECT c.nme FROM customers c JOIN ordrs o ON o.customer_id = c.id",
                         shop_schema("sqlite"), "sqlite")
    text = format_issues_for_repair(issues)
    assert "- Table `ordrs` does not exist. Did you mean `orders` or `order_items`?" in text
    assert "Column `nme` does not exist in `customers` (alias `c`). Did you mean `name`?" in text
    assert format_issues_for_repair([]) == ""


def test_parse_error_is_one_issue():
    [issue] = prevalidate("SELEC name FROM customers", shop_schema("duckdb"), "duckdb")
    assert issue.kind == "parse_error" and "does not parse" in issue.message
    too_deep = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    assert [i.kind for i in prevalidate(too_deep, shop_schema("duckdb"), "duckdb")] == ["parse_error"]


def test_a_parsed_statement_is_accepted_and_left_unchanged():
    from baton.specialists.sql.safety import check_safety

    sql = "SELECT c.nme FROM customers c"
    statement = check_safety(sql, "postgres").statement
    before = statement.sql("postgres")
    assert [i.name for i in prevalidate(statement, shop_schema("postgres"), "postgres")] == ["nme"]
    assert statement.sql("postgres") == before


def test_unknowable_sources_are_not_flagged():
    schema = shop_schema("postgres")
    for sql in ("SELECT table_name FROM information_schema.tables",
                "SELECT relname FROM pg_class",
                "SELECT g.n FROM generate_series(1, 3) AS g(n)",
                "SELECT x FROM generate_series(1, 3) AS x",
                "SELECT current_user, ctid FROM orders"):
        assert prevalidate(sql, schema, "postgres") == [], sql
    assert prevalidate("SELECT name FROM sqlite_master", shop_schema("sqlite"), "sqlite") == []


def test_select_alias_in_where_depends_on_the_dialect():
    sql = "SELECT total * 2 AS doubled FROM orders WHERE doubled > 10"
    assert prevalidate(sql, shop_schema("duckdb"), "duckdb") == []
    assert [i.name for i in prevalidate(sql, shop_schema("postgres"), "postgres")] == ["doubled"]


def test_schema_qualified_tables_resolve():
    schema = shop_schema("postgres")
    schema.add(TableInfo("ledger", [ColumnInfo("amount")], schema="finance"))
    assert prevalidate("SELECT l.amount FROM finance.ledger AS l JOIN public.orders o ON true", schema,
                       "postgres") == []
    assert _key(prevalidate("SELECT amout FROM finance.ledger", schema, "postgres")[0]) == \
        ("unknown_column", "amout", "ledger", "amount")


def test_empty_schema_checks_nothing_and_bad_dialect_raises():
    assert prevalidate("SELECT anything FROM anywhere", SchemaInfo("sqlite"), "sqlite") == []
    with pytest.raises(UnsupportedDialectError):
        prevalidate("SELECT 1", shop_schema("sqlite"), "oracle")


def test_column_aliases_of_derived_tables_replace_the_inner_names():
    sql = "SELECT x.total, x.status FROM (SELECT total, status FROM orders) AS x(total, state)"
    assert [_key(i) for i in prevalidate(sql, shop_schema("duckdb"), "duckdb")] == \
        [("unknown_column", "status", "x", "state")]


def test_unnest_column_aliases_are_sources_too():
    schema = shop_schema("duckdb")
    assert prevalidate("SELECT u.v, o.id FROM orders o, UNNEST([1, 2]) AS u(v)", schema, "duckdb") == []
    assert [_key(i) for i in prevalidate("SELECT u.w FROM orders o, UNNEST([1, 2]) AS u(v)", schema, "duckdb")] == \
        [("unknown_column", "w", "u", None)]


def test_same_wrong_name_is_reported_once():
    sql = "SELECT totl FROM orders WHERE totl > 1 ORDER BY totl"
    assert [i.name for i in prevalidate(sql, shop_schema("mysql"), "mysql")] == ["totl"]
