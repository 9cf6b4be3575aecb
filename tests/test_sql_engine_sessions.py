"""No session state outlives a request on a pooled connection (real servers, parser bypassed).

Each test uses a pool of one connection and checks that the second query ran in the same
server session as the first (same backend pid / connection id): the state would still be
there had the connection not been reset on check-in.
"""

from __future__ import annotations

import uuid

import pytest

from baton.specialists.sql.classify import ErrorClass, SQLExecutionError
from sql_test_databases import make_db  # noqa: F401  (fixture)

CUSTOMERS = (
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(100))",
    "INSERT INTO customers VALUES (1, 'Ada'), (2, 'Bo'), (3, 'Cy')",
)


async def test_postgres_advisory_lock_taken_by_a_query_is_released_before_the_next(make_db):
    db = make_db("postgres", *CUSTOMERS)
    conn = db.connection(pool_size=1)
    key = uuid.uuid4().int % 2_000_000_000
    first = await conn.execute_readonly(f"SELECT pg_backend_pid(), pg_advisory_lock({key})")
    after = await conn.execute_readonly(
        f"SELECT pg_backend_pid(), count(l.*) FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objid = {key}"
    )
    assert after.rows[0][0] == first.rows[0][0]  # the same session...
    assert after.rows[0][1] == 0  # ...without the lock


async def test_postgres_temp_table_and_settings_from_any_checkout_do_not_reach_the_next_request(make_db):
    """A temporary table would shadow the real one (pg_temp is searched first)."""
    db = make_db("postgres", *CUSTOMERS)
    conn = db.connection(pool_size=1, allow_privileged_role=True)  # the reader role may not create the leftovers
    with conn.engine.connect() as c:  # an unguarded checkout of the same pool
        pid = c.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        c.exec_driver_sql("CREATE TEMP TABLE customers AS SELECT 999 AS id")
        c.exec_driver_sql("SET work_mem = '1234kB'")
        c.exec_driver_sql("PREPARE leftover AS SELECT 1")
        c.commit()
    result = await conn.execute_readonly(
        "SELECT pg_backend_pid(), current_setting('work_mem'), (SELECT count(*) FROM pg_prepared_statements "
        "WHERE name = 'leftover'), array_agg(id ORDER BY id) FROM customers"
    )
    (same_pid, work_mem, prepared, ids), = result.rows
    assert same_pid == pid
    assert work_mem != "1234kB" and prepared == 0
    assert list(ids) == [1, 2, 3]
    # the connection's own start-up settings survive the reset: unqualified names still resolve
    assert (await conn.execute_readonly("SELECT count(*) FROM customers")).rows == [[3]]


async def test_mysql_locks_and_variables_set_by_a_query_are_gone_for_the_next(make_db):
    db = make_db("mysql", *CUSTOMERS)
    # the administrator: the reader account limits its connections, so its sessions are closed
    # at check-in rather than reset (session_reset.py); this test is about the reset
    conn = db.connection(pool_size=1, allow_privileged_role=True)
    lock = f"baton_{uuid.uuid4().hex[:12]}"
    first = await conn.execute_readonly(f"SELECT CONNECTION_ID(), GET_LOCK('{lock}', 0), @leftover := 5")
    assert first.rows[0][1:] == [1, 5]
    await conn.execute_readonly("SET @@session.sql_select_limit = 1")  # would truncate every later result
    after = await conn.execute_readonly(f"SELECT CONNECTION_ID(), IS_USED_LOCK('{lock}'), @leftover")
    assert after.rows == [[first.rows[0][0], None, None]]
    assert (await conn.execute_readonly("SELECT id FROM customers ORDER BY id")).rows == [[1], [2], [3]]


async def test_mysql_temp_table_and_prepared_statement_do_not_shadow_the_real_table_later(make_db):
    db = make_db("mysql", *CUSTOMERS)
    conn = db.connection(pool_size=1, allow_privileged_role=True)  # the reader account may not create the leftovers
    with conn.engine.connect() as c:  # an unguarded checkout of the same pool
        connection_id = c.exec_driver_sql("SELECT CONNECTION_ID()").scalar()
        c.exec_driver_sql("CREATE TEMPORARY TABLE customers (id INT)")
        c.exec_driver_sql("INSERT INTO customers VALUES (999)")
        c.exec_driver_sql("PREPARE leftover FROM 'SELECT 1'")
        c.commit()
    result = await conn.execute_readonly("SELECT CONNECTION_ID(), id FROM customers ORDER BY id")
    assert result.rows == [[connection_id, 1], [connection_id, 2], [connection_id, 3]]
    with pytest.raises(SQLExecutionError):
        await conn.execute_readonly("EXECUTE leftover")
    # text still round-trips in the connection's character set after the reset
    assert (await conn.execute_readonly("SELECT 'Zoë ✓'")).rows == [["Zoë ✓"]]


@pytest.mark.parametrize("sql", [
    "CREATE TEMP TABLE customers AS SELECT 999 AS id",
    "SET VARIABLE leftover = 7",
    "PREPARE leftover AS SELECT 999",
    "CREATE TEMP MACRO customers_count() AS 999",
    "EXPLAIN ANALYZE CREATE TEMP TABLE customers AS SELECT 999 AS id",
    "SELECT 1; CREATE TEMP TABLE customers AS SELECT 999 AS id",
])
async def test_duckdb_runs_only_a_select_so_nothing_is_left_on_the_connection(make_db, sql):
    """A read-only DuckDB still creates temporary objects; its own parser keeps them out."""
    db = make_db("duckdb", *CUSTOMERS)
    conn = db.connection(pool_size=1)
    with pytest.raises(SQLExecutionError) as refused:
        await conn.execute_readonly(sql)
    assert refused.value.error_class is ErrorClass.PERMISSION_DENIED
    assert (await conn.execute_readonly("SELECT id FROM customers ORDER BY id")).rows == [[1], [2], [3]]
    assert (await conn.execute_readonly("SELECT getvariable('leftover')")).rows == [[None]]
    plan = await conn.execute_readonly("EXPLAIN (FORMAT JSON) SELECT id FROM customers")  # a plain EXPLAIN still runs
    assert plan.rows
