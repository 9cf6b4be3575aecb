"""The value index (issue 23): a question's words find the table whose text column holds them."""

from __future__ import annotations

import pytest

from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.value_index import MAX_VALUES, build_value_index
from sql_test_databases import make_db  # noqa: F401  (fixture)

COUNTRIES = ["Germany", "Côte d''Ivoire", "United States"]  # quotes doubled: SQL literals
SETUP = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, country VARCHAR(40), email VARCHAR(80), segment VARCHAR(20))",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, status VARCHAR(20), note VARCHAR(200))",
    *(f"INSERT INTO customers VALUES ({i}, '{COUNTRIES[i % 3]}', 'c{i}@x.org', '{['Small Business', 'Enterprise'][i % 2]}')"
      for i in range(30)),
    *(f"INSERT INTO orders VALUES ({i}, {i % 30}, '{['shipped', 'cancelled'][i % 2]}', 'free text number {i}')"
      for i in range(MAX_VALUES + 20)),
]


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "postgres", "mysql"])
async def test_values_find_their_tables_and_high_cardinality_text_is_left_out(make_db, kind):
    db = make_db(kind, *SETUP)
    connection = SQLConnection(db.url, schema=db.schema) if db.schema else SQLConnection(db.url)
    try:
        index = await build_value_index(connection, await connection.schema())
    finally:
        await connection.aclose()
    assert index.tables_for("Revenue from Germany last year") == {"customers": ["country = germany"]}
    assert index.tables_for("orders from cote d'ivoire") == {"customers": ["country = cote d ivoire"]}  # accents folded
    assert index.tables_for("How many were cancelled for small business customers?") == {
        "orders": ["status = cancelled"], "customers": ["segment = small business"]}
    assert index.tables_for("free text number 3") == {}  # note has more than MAX_VALUES values: not a category
    assert index.tables_for("c3@x.org") == {}  # emails are not read
    assert index.columns_read == 4  # country, segment, status, note (ids, keys and emails skipped)


async def test_an_unreadable_column_is_left_out_and_the_rest_indexed(make_db):
    db = make_db("sqlite", *SETUP[:2], "INSERT INTO customers VALUES (1, 'Germany', 'a@b.c', 'Enterprise')")
    connection = SQLConnection(db.url)
    try:
        schema = await connection.schema()
        schema.table("orders").columns[2].name = "no_such_column"  # type: ignore[union-attr]  (the catalogue moved on)
        index = await build_value_index(connection, schema)
    finally:
        await connection.aclose()
    assert index.tables_for("germany") == {"customers": ["country = germany"]}


async def test_the_index_is_built_once_per_schema_version_in_the_background(make_db):
    import asyncio

    from baton.specialists.sql.value_index import _BUILT, value_index_for

    db = make_db("sqlite", *SETUP)
    connection = SQLConnection(db.url)
    try:
        schema = await connection.schema()
        assert value_index_for(connection, schema) is None  # started, not awaited by the question
        await asyncio.wait_for(_BUILT[connection][1], 30)
        first = value_index_for(connection, schema)
        assert first is not None and "customers" in first.tables_for("germany")
        assert value_index_for(connection, schema) is first  # built once
        newer = await connection.schema(refresh=True)
        assert value_index_for(connection, newer) is None  # a new schema version: built again
        await asyncio.wait_for(_BUILT[connection][1], 30)
        assert value_index_for(connection, newer) is not first
    finally:
        await connection.aclose()
