"""Introspection of a warehouse-size PostgreSQL schema: cold, unchanged, one table changed (issue 23).

    BATON_TEST_POSTGRES_URL=postgresql+psycopg://... .venv/bin/python bench/introspection_scale.py [--tables 2000]

Creates a fresh database with N tables (8 columns each, a primary key, a foreign key to the
previous table, a table comment), then times ``SQLConnection.schema()`` cold, a refresh with
nothing changed (only the catalogue's versions are read: ``introspection._fingerprints``), and a
refresh after one ``ALTER TABLE`` and one ``COMMENT ON`` (only those tables are read again).
Targets: cold <= 10 s, unchanged <= 0.5 s. Prints the figures; the database is dropped after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import sqlalchemy as sa

from baton.specialists.sql.connection import SQLConnection


def _create(url: str, count: int) -> None:
    engine = sa.create_engine(url)
    for start in range(0, count, 200):  # a transaction per 200 tables: a lock each, within max_locks_per_transaction
        with engine.begin() as conn:
            for i in range(start, min(start + 200, count)):
                conn.exec_driver_sql(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, a{i} INTEGER, b TEXT, c DATE, d NUMERIC, "
                                     f"e TEXT, f INTEGER REFERENCES t{max(i - 1, 0)}(id), g TEXT)")
                conn.exec_driver_sql(f"COMMENT ON TABLE t{i} IS 'generated table number {i}'")
    engine.dispose()


async def _timed(connection: SQLConnection, refresh: bool) -> float:
    started = time.perf_counter()
    await connection.schema(refresh=refresh)
    return time.perf_counter() - started


async def run(url: str, count: int) -> None:
    connection = SQLConnection(url, id="bench", allow_privileged_role=True)
    try:
        cold = await _timed(connection, False)
        unchanged = [await _timed(connection, True) for _ in range(5)]
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER TABLE t7 ADD COLUMN added_later TEXT")
            conn.exec_driver_sql("COMMENT ON COLUMN t9.b IS 'now described'")
        engine.dispose()
        changed = await _timed(connection, True)
        schema = await connection.schema()
        assert schema.table("t7").column("added_later") is not None, "the changed table was not read again"  # type: ignore[union-attr]
        assert schema.table("t9").column("b").description == "now described"  # type: ignore[union-attr]
    finally:
        await connection.aclose()
    print(f"{count} tables: cold {cold:.2f} s (target <= 10), unchanged refresh median "
          f"{sorted(unchanged)[len(unchanged) // 2]:.3f} s (target <= 0.5), after one ALTER and one COMMENT {changed:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=2000)
    args = parser.parse_args()
    base = os.environ.get("BATON_TEST_POSTGRES_URL")
    if not base:
        raise SystemExit("BATON_TEST_POSTGRES_URL is not set: this bench needs a PostgreSQL server")
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    name = f"baton_introspection_{uuid.uuid4().hex[:6]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        url = sa.make_url(base).set(database=name).render_as_string(hide_password=False)
        started = time.perf_counter()
        _create(url, args.tables)
        print(f"created {args.tables} tables in {time.perf_counter() - started:.1f} s")
        asyncio.run(run(url, args.tables))
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


if __name__ == "__main__":
    main()
