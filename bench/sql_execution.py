"""What the read-only guard costs per query: ``SQLConnection.execute_readonly`` (worker
thread, guard, caps, types) against the bare driver on the same file, for SQLite and DuckDB,
plus one whole ``validate_and_run`` pass (safety + pre-validation + execution).

Run: .venv/bin/python bench/sql_execution.py
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.validation import validate_and_run

QUERY = "SELECT c.name, COUNT(*) AS n, SUM(o.amount) AS total FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name ORDER BY total DESC LIMIT 10"
SETUP = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount INTEGER)",
]
N = 300


def fill(con) -> None:
    for statement in SETUP:
        con.execute(statement)
    con.executemany("INSERT INTO customers VALUES (?, ?)", [(i, f"c{i}") for i in range(200)])
    con.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(i, i % 200, i * 3) for i in range(5000)])


def per_query_us(fn, n=N) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e6


async def per_query_async_us(fn, n=N) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e6


async def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    for kind in ("sqlite", "duckdb"):
        path = tmp / f"bench.{kind}"
        if kind == "sqlite":
            con = sqlite3.connect(path)
            fill(con)
            con.commit()
            raw = lambda: con.execute(QUERY).fetchall()
        else:
            con = duckdb.connect(str(path))
            fill(con)
            raw = lambda: con.execute(QUERY).fetchall()
        bare = per_query_us(raw)
        con.close()
        conn = SQLConnection(f"{kind}:///{path}")
        schema = await conn.schema()
        await conn.execute_readonly(QUERY)
        guarded = await per_query_async_us(lambda: conn.execute_readonly(QUERY))
        full = await per_query_async_us(lambda: validate_and_run(QUERY, number=1, connection=conn, schema=schema))
        conn.close()
        print(f"{kind:7s} bare driver {bare:8.0f} us | guarded execute {guarded:8.0f} us (+{guarded - bare:.0f} us) "
              f"| validate_and_run {full:8.0f} us (+{full - guarded:.0f} us for safety + pre-validation)")


if __name__ == "__main__":
    asyncio.run(main())
