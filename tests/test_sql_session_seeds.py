"""A seed set by one request does not make the next request's ``random()`` predictable.

Each engine's seeding call goes through ``execute_readonly`` (the parser check, which
refuses ``setseed``, is bypassed on purpose), on a pool of one connection; the next request
runs on the same pooled connection (same backend pid / connection id where the engine has
one) and must not draw the sequence that the seed makes anyone able to replay, computed here
on a separate connection.
"""

from __future__ import annotations

import duckdb
import pytest
import sqlalchemy as sa

from baton.specialists.sql.classify import SQLExecutionError
from sql_test_databases import make_db  # noqa: F401  (fixture)

EMPTY = "CREATE TABLE filler (x INTEGER)"


def replayed(url: str, seed_sql: str, draw_sql: str) -> list:
    """What a seeded session draws next, on a connection of its own."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as c:
            c.exec_driver_sql(seed_sql)
            return list(c.exec_driver_sql(draw_sql).one())
    finally:
        engine.dispose()


async def test_postgres_setseed_does_not_reach_the_next_request_on_the_pooled_connection(make_db):
    db = make_db("postgres", EMPTY)
    conn = db.connection(pool_size=1)
    predictable = replayed(db.admin_url, "SELECT setseed(0.5)", "SELECT random(), random(), random()")
    assert predictable == replayed(db.admin_url, "SELECT setseed(0.5)", "SELECT random(), random(), random()")
    (pid, _), = (await conn.execute_readonly("SELECT pg_backend_pid(), setseed(0.5)")).rows
    (same_pid, *drawn), = (await conn.execute_readonly("SELECT pg_backend_pid(), random(), random(), random()")).rows
    assert same_pid == pid
    assert drawn != predictable


async def test_duckdb_setseed_does_not_reach_the_next_request_on_the_pooled_connection(make_db):
    db = make_db("duckdb", EMPTY)
    conn = db.connection(pool_size=1)
    seeded = duckdb.connect()
    seeded.execute("SELECT setseed(0.5)")
    predictable = list(seeded.execute("SELECT random(), random(), random()").fetchone())
    seeded.close()
    await conn.execute_readonly("SELECT setseed(0.5)")
    with conn.engine.connect() as c:  # the pool's one connection, as the next request gets it
        assert list(c.exec_driver_sql("SELECT random(), random(), random()").one()) != predictable
        c.exec_driver_sql("SELECT setseed(0.5)")  # the same connection, unguarded: the sequence is replayable
        assert list(c.exec_driver_sql("SELECT random(), random(), random()").one()) == predictable
    drawn = (await conn.execute_readonly("SELECT random(), random(), random()")).rows[0]
    assert drawn != predictable


async def test_mysql_rand_seeds_set_by_a_request_are_reset_before_the_next(make_db):
    db = make_db("mysql", EMPTY)
    # the administrator: the reader account limits its connections, so its sessions are closed
    # at check-in rather than reset (session_reset.py); the reset is what is tested here
    conn = db.connection(pool_size=1, allow_privileged_role=True)
    seed = "SET @@rand_seed1 = 12345, @@rand_seed2 = 67890"
    predictable = replayed(db.admin_url, seed, "SELECT RAND(), RAND(), RAND()")
    connection_id = (await conn.execute_readonly("SELECT CONNECTION_ID()")).rows[0][0]
    await conn.execute_readonly(seed)
    (same_id, *drawn), = (await conn.execute_readonly("SELECT CONNECTION_ID(), RAND(), RAND(), RAND()")).rows
    assert same_id == connection_id
    assert drawn != predictable


async def test_sqlite_has_no_seed_a_query_could_set(make_db):
    """SQLite's random() draws from its own process-wide source; no SQL function seeds it."""
    db = make_db("sqlite", EMPTY)
    conn = db.connection(pool_size=1)
    for sql in ("SELECT setseed(0.5)", "SELECT srand(1)", "PRAGMA seed = 1"):
        with pytest.raises(SQLExecutionError):
            await conn.execute_readonly(sql)


async def test_mysql_an_account_that_limits_its_connections_gets_a_new_session_per_request(make_db):
    """COM_RESET_CONNECTION takes a session out of its account's MAX_USER_CONNECTIONS count
    (MariaDB 10.11), so such sessions are closed at check-in instead (session_reset.py)."""
    db = make_db("mysql", EMPTY)
    conn = db.connection(pool_size=1)
    db.run(f"ALTER USER '{conn.url.username}'@'%%' WITH MAX_USER_CONNECTIONS 5")  # baton db grant sets none
    ask = "SELECT CONNECTION_ID(), @@session.max_user_connections"
    first_id, limit = (await conn.execute_readonly(ask)).rows[0]
    second_id, still = (await conn.execute_readonly(ask)).rows[0]
    assert limit > 0 and still == limit  # counted against the account, as a login is
    assert second_id != first_id
