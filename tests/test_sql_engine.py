"""Engines on the four real databases: introspection, error classes produced by the real
engine, read-only enforcement by the engine alone (the parser check bypassed), caps, EXPLAIN."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from baton.errors import ConfigurationError
from baton.specialists.sql.classify import ErrorClass, SQLExecutionError
from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.explain import check_plan
from baton.specialists.sql.introspection import sample_rows
from sql_test_databases import KINDS, make_db  # noqa: F401  (fixture)

SHOP = (
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(100), city VARCHAR(100), deleted_at TIMESTAMP NULL)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount INTEGER, created_at DATE, "
    "FOREIGN KEY (customer_id) REFERENCES customers(id))",
    "INSERT INTO customers VALUES (1, 'Ada', 'London', NULL), (2, 'Bo', 'Oslo', NULL), (3, 'Cy', 'Rome', '2024-01-02 00:00:00')",
    "INSERT INTO orders VALUES (1, 1, 1250, '2024-01-05'), (2, 1, 4000, '2024-02-01'), (3, 2, 999, '2024-03-09')",
)

SLOW = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
    "duckdb": "SELECT COUNT(*) FROM range(1000000000000) a WHERE a.range % 7 = 3",
    "postgres": "SELECT pg_sleep(5)",
    "mysql": "SELECT SLEEP(5)",
}
WRITES = [
    "INSERT INTO customers VALUES (9, 'Eve', 'Paris', NULL)",
    "UPDATE orders SET amount = 0",
    "DELETE FROM orders",
    "DROP TABLE orders",
    "CREATE TABLE intruder (id INTEGER)",
    "ALTER TABLE customers ADD COLUMN pwned INTEGER",
]
BYPASSES = {  # what a parser miss could let through, per engine
    "sqlite": ["ATTACH DATABASE 'stolen.db' AS stolen", "PRAGMA query_only = OFF", "SELECT load_extension('x')"],
    "duckdb": ["SELECT * FROM read_csv('/etc/passwd')", "SET enable_external_access = true", "COMMIT; DROP TABLE orders",
               "ATTACH 'other.duckdb' AS other"],
    "postgres": ["COMMIT; DROP TABLE orders", "SET TRANSACTION READ WRITE; DROP TABLE orders", "TRUNCATE orders"],
    "mysql": ["COMMIT; DROP TABLE orders", "TRUNCATE orders", "RENAME TABLE orders TO orders_gone"],
}


@pytest.mark.parametrize("kind", KINDS)
async def test_introspection_reads_tables_keys_and_row_estimates(make_db, kind):
    db = make_db(kind, *SHOP)
    if kind == "postgres":
        db.run("ANALYZE customers", "ANALYZE orders")
    if kind == "mysql":
        db.run("ANALYZE TABLE customers", "ANALYZE TABLE orders")
    conn = db.connection()
    schema = await conn.schema()
    assert set(schema.tables) == {"customers", "orders"}
    orders = schema.table("orders")
    assert orders.column_names == ["id", "customer_id", "amount", "created_at"]
    assert [c.name for c in orders.columns if c.primary_key] == ["id"]
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in orders.foreign_keys] == [(["customer_id"], "customers", ["id"])]
    assert schema.table("customers").row_estimate == 3
    assert orders.row_estimate == 3
    assert await conn.schema() is schema  # cached
    assert await conn.refresh_schema() is not schema


@pytest.mark.parametrize("kind", KINDS)
async def test_each_error_class_comes_from_the_real_engine(make_db, kind):
    db = make_db(kind, *SHOP)
    conn = db.connection(statement_timeout_s=0.3, connection_retries=0)
    cases = {
        "SELECT * FROM custmers": ErrorClass.TABLE_NOT_FOUND,
        "SELECT nme FROM customers": ErrorClass.COLUMN_NOT_FOUND,
        "SELEC name FROM customers": ErrorClass.SYNTAX_ERROR,
        SLOW[kind]: ErrorClass.TIMEOUT,
        "DELETE FROM orders": ErrorClass.PERMISSION_DENIED,
    }
    for sql, expected in cases.items():
        with pytest.raises(SQLExecutionError) as caught:
            await conn.execute_readonly(sql)
        assert caught.value.error_class is expected, (sql, caught.value.error)
        assert caught.value.error.code  # a code or exception type, not only prose
    names = {}
    for sql in ("SELECT * FROM custmers", "SELECT nme FROM customers"):
        with pytest.raises(SQLExecutionError) as caught:
            await conn.execute_readonly(sql)
        names[sql] = caught.value.error.name
    assert names == {"SELECT * FROM custmers": "custmers", "SELECT nme FROM customers": "nme"}
    # the connection still works after every failure (transactions rolled back, interrupts cleared)
    assert (await conn.execute_readonly("SELECT COUNT(*) FROM orders")).rows == [[3]]


@pytest.mark.parametrize("kind", KINDS)
async def test_connection_error_is_classified(make_db, kind, tmp_path):
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'missing.sqlite'}"
    elif kind == "duckdb":
        url = f"duckdb:///{tmp_path / 'missing.duckdb'}"
    else:
        db = make_db(kind)
        url = sa.engine.make_url(db.url).set(port=1).render_as_string(hide_password=False)
    conn = SQLConnection(url, connection_retries=1)
    try:
        with pytest.raises(SQLExecutionError) as caught:
            await conn.execute_readonly("SELECT 1")
        assert caught.value.error_class is ErrorClass.CONNECTION_ERROR
        assert not caught.value.error_class.retryable
    finally:
        conn.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_the_engine_alone_refuses_every_write(make_db, kind):
    """The parser check is bypassed (execute_readonly is called directly): the read-only
    transaction/connection is what refuses, and nothing changes."""
    db = make_db(kind, *SHOP)
    before = db.checksum()
    tables_before = db.tables()
    conn = db.connection(allow_privileged_role=True)  # as the administrator: the guard alone refuses, not the role
    for sql in [*WRITES, *BYPASSES[kind]]:
        with pytest.raises(SQLExecutionError) as caught:
            await conn.execute_readonly(sql)
        assert caught.value.error_class in (ErrorClass.PERMISSION_DENIED, ErrorClass.SYNTAX_ERROR, ErrorClass.OTHER), (sql, caught.value.error)
    # a write that would have been allowed in a later transaction is refused too (guard per statement)
    with pytest.raises(SQLExecutionError) as caught:
        await conn.execute_readonly("INSERT INTO orders VALUES (77, 1, 1, '2024-01-01')")
    assert caught.value.error_class is ErrorClass.PERMISSION_DENIED
    assert db.tables() == tables_before
    assert db.checksum() == before


async def test_postgres_permission_denied_for_a_role_without_grants(make_db, postgres_url):
    db = make_db("postgres", *SHOP)
    role = f"baton_ro_{uuid.uuid4().hex[:10]}"
    db.run(f"CREATE ROLE {role} LOGIN", f"GRANT USAGE ON SCHEMA {db.schema} TO {role}", f"GRANT SELECT ON customers TO {role}")
    try:
        url = sa.engine.make_url(postgres_url).set(username=role).render_as_string(hide_password=False)
        conn = SQLConnection(url, schema=db.schema)
        try:
            assert (await conn.execute_readonly("SELECT COUNT(*) FROM customers")).rows == [[3]]
            with pytest.raises(SQLExecutionError) as caught:
                await conn.execute_readonly("SELECT * FROM orders")
            assert caught.value.error_class is ErrorClass.PERMISSION_DENIED
            assert caught.value.error.code == "42501"
        finally:
            conn.close()
    finally:
        db.run(f"REVOKE ALL ON ALL TABLES IN SCHEMA {db.schema} FROM {role}", f"REVOKE USAGE ON SCHEMA {db.schema} FROM {role}", f"DROP ROLE {role}")


async def test_mysql_permission_denied_for_a_user_without_select(make_db, mysql_url):
    db = make_db("mysql", *SHOP)
    user = f"baton_ro_{uuid.uuid4().hex[:8]}"
    database = sa.engine.make_url(db.url).database
    hosts = ("localhost", "127.0.0.1", "%%")  # %% : PyMySQL formats the statement
    root = sa.create_engine(mysql_url, poolclass=sa.pool.NullPool)
    with root.begin() as c:
        for host in hosts:
            c.exec_driver_sql(f"CREATE USER '{user}'@'{host}'")
            c.exec_driver_sql(f"GRANT SELECT ON {database}.customers TO '{user}'@'{host}'")
    try:
        url = sa.engine.make_url(db.admin_url).set(username=user).render_as_string(hide_password=False)  # no password
        conn = SQLConnection(url)
        try:
            assert (await conn.execute_readonly("SELECT COUNT(*) FROM customers")).rows == [[3]]
            with pytest.raises(SQLExecutionError) as caught:
                await conn.execute_readonly("SELECT * FROM orders")
            assert caught.value.error_class is ErrorClass.PERMISSION_DENIED
            assert caught.value.error.code == "1142"
        finally:
            conn.close()
    finally:
        with root.begin() as c:
            for host in hosts:
                c.exec_driver_sql(f"DROP USER IF EXISTS '{user}'@'{host}'")
        root.dispose()


@pytest.mark.parametrize("kind", KINDS)
async def test_row_and_byte_caps_truncate_and_keep_types(make_db, kind):
    db = make_db(kind, *SHOP)
    conn = db.connection(row_cap=2)
    result = await conn.execute_readonly("SELECT id, name FROM customers ORDER BY id")
    assert result.rows == [[1, "Ada"], [2, "Bo"]]
    assert result.truncated and result.columns == ["id", "name"]
    assert len(result.column_types) == 2 and all(result.column_types)
    small = await conn.execute_readonly("SELECT name FROM customers ORDER BY id", byte_cap=4)
    assert small.truncated and small.rows == [["Ada"]]
    full = await db.connection().execute_readonly("SELECT id FROM orders ORDER BY id")
    assert not full.truncated and full.row_count == 3


@pytest.mark.parametrize("kind", KINDS)
async def test_explain_flags_full_scans_of_big_tables_only_without_limit(make_db, kind):
    rows = ", ".join(f"({i}, {i % 3 + 1}, {i * 10}, '2024-01-01')" for i in range(10, 400))
    db = make_db(kind, *SHOP, f"INSERT INTO orders VALUES {rows}")
    if kind == "postgres":
        db.run("ANALYZE orders", "ANALYZE customers")
    if kind == "mysql":
        db.run("ANALYZE TABLE orders")
    conn = db.connection(explain=True, full_scan_row_threshold=100)
    schema = await conn.schema()
    check = await check_plan(conn, "SELECT SUM(amount) FROM orders WHERE amount > 5", schema)
    assert [s.table for s in check.flagged] == ["orders"]
    limited = await check_plan(conn, "SELECT amount FROM orders WHERE amount > 5 LIMIT 10", schema)
    assert limited.ok and limited.scans  # the scan is seen, but a LIMIT lets the engine stop early
    small = await check_plan(conn, "SELECT name FROM customers", schema)
    assert small.ok  # customers has 3 rows: under the threshold


async def test_sample_rows_are_opt_in_and_go_through_the_guard(make_db):
    db = make_db("sqlite", *SHOP)
    conn = db.connection()
    assert conn.options.include_sample_rows is False
    sample = await sample_rows(conn, "customers", 2)
    assert sample.row_count == 2 and sample.columns[:2] == ["id", "name"]


def test_configuration_errors_are_typed(tmp_path):
    with pytest.raises(ConfigurationError):
        SQLConnection("oracle://x@y/z")
    with pytest.raises(ConfigurationError):
        SQLConnection("sqlite://").engine
    with pytest.raises(ConfigurationError):
        SQLConnection(f"sqlite:///{tmp_path}/x.db", schema="x; DROP")
    with pytest.raises(ConfigurationError):
        SQLConnection(f"sqlite:///{tmp_path}/x.db", row_cap=0)


@pytest.mark.parametrize("name", ["we?ird.sqlite", "hash#tag.sqlite", "pct%41.sqlite", "a b?c#d%2F.sqlite"])
async def test_sqlite_paths_with_uri_characters_open_that_file_read_only(tmp_path, name):
    """``?``, ``#`` and ``%`` in a path must not be read as URI syntax (which opened another,
    writable file and dropped ``mode=ro``)."""
    import sqlite3

    path = tmp_path / name
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE t (x INTEGER)")
        setup.execute("INSERT INTO t VALUES (42)")
    setup.close()
    conn = SQLConnection(sa.engine.URL.create("sqlite", database=str(path)))
    try:
        assert (await conn.execute_readonly("SELECT x FROM t")).rows == [[42]]
        with pytest.raises(SQLExecutionError) as refused:
            await conn.execute_readonly("INSERT INTO t VALUES (1)")
        assert refused.value.error_class is ErrorClass.PERMISSION_DENIED
    finally:
        conn.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no stray file was created
