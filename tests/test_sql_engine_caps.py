"""Row and byte caps bound what the driver loads, not only what is returned.

On each real engine a query with far more rows than ``row_cap`` returns ``row_cap`` rows
marked truncated, and the server itself reports running it with ``LIMIT row_cap + 1``
(PostgreSQL ``current_query()``, MariaDB's PROCESSLIST, DuckDB ``current_query()``); SQLite
is given an endless result, which only a lazily stepped cursor can cut. No timings.
"""

from __future__ import annotations

import pytest

from baton.specialists.sql.rowcap import cap_rows
from sql_test_databases import KINDS, make_db  # noqa: F401  (fixture)

EMPTY = "CREATE TABLE filler (x INTEGER)"  # the file-based engines need a database to open

HUGE = {  # (many more rows than any cap, with the server's view of the running statement)
    "postgres": "SELECT generate_series(1, 50000000), current_query()",
    "mysql": "SELECT seq, (SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()) "
             "FROM seq_1_to_50000000 ORDER BY seq",
    "duckdb": "SELECT range + 1, current_query() FROM range(1000000000000)",
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x, 'endless' FROM c",
}


@pytest.mark.parametrize("kind", KINDS)
async def test_a_huge_result_is_cut_by_the_server_not_after_loading_it(make_db, kind):
    db = make_db(kind, EMPTY)
    conn = db.connection(row_cap=10)
    result = await conn.execute_readonly(HUGE[kind])
    assert [row[0] for row in result.rows] == list(range(1, 11))
    assert result.truncated
    if kind != "sqlite":
        assert "LIMIT 11" in result.rows[0][1]  # what the server says it ran


@pytest.mark.parametrize("kind", KINDS)
async def test_truncation_is_exact_at_the_cap(make_db, kind):
    db = make_db(kind, "CREATE TABLE t (x INTEGER)", "INSERT INTO t VALUES (1), (2), (3)")
    conn = db.connection(row_cap=3)
    exact = await conn.execute_readonly("SELECT x FROM t ORDER BY x")
    assert exact.rows == [[1], [2], [3]] and not exact.truncated
    over = await conn.execute_readonly("SELECT x FROM t ORDER BY x", row_cap=2)
    assert over.rows == [[1], [2]] and over.truncated
    own_limit = await conn.execute_readonly("SELECT x FROM t ORDER BY x LIMIT 1")
    assert own_limit.rows == [[1]] and not own_limit.truncated


BIG_CELL = {
    "postgres": "SELECT 7 AS id, repeat('x', 100000) AS body",
    "mysql": "SELECT 7 AS id, REPEAT('x', 100000) AS body",
    "duckdb": "SELECT 7 AS id, repeat('x', 100000) AS body",
    "sqlite": "SELECT 7 AS id, replace(hex(zeroblob(50000)), '00', 'xx') AS body",
}


@pytest.mark.parametrize("kind", KINDS)
async def test_one_huge_cell_is_cut_to_the_byte_cap_and_marked(make_db, kind):
    db = make_db(kind, EMPTY)
    conn = db.connection(byte_cap=1000)
    result = await conn.execute_readonly(BIG_CELL[kind])
    (ident, body), = result.rows
    assert ident == 7
    assert len(body) <= 1000 - 1 and body.endswith("…") and set(body[:-1]) == {"x"}
    assert result.truncated


@pytest.mark.parametrize(("dialect", "sql", "capped"), [
    ("postgres", "SELECT a FROM t", "SELECT a FROM t\nLIMIT 11"),
    ("postgres", "SELECT a FROM t; -- the end", "SELECT a FROM t\nLIMIT 11"),
    ("mysql", "SELECT a FROM t # note", "SELECT a FROM t\nLIMIT 11"),
    ("postgres", "SELECT a FROM t LIMIT 5", "SELECT a FROM t LIMIT 5"),
    ("postgres", "SELECT a FROM t LIMIT 500000 OFFSET 2", "SELECT a FROM t LIMIT 11 OFFSET 2"),
    ("mysql", "SELECT a FROM t LIMIT 5, 100000", "SELECT a FROM t LIMIT 5, 11"),
    ("postgres", "SELECT a FROM t FETCH FIRST 99999 ROWS ONLY", "SELECT a FROM t FETCH FIRST 11 ROWS ONLY"),
    ("postgres", "SELECT a FROM t LIMIT ALL", "SELECT * FROM (\nSELECT a FROM t LIMIT ALL\n) AS baton_capped LIMIT 11"),
    ("duckdb", "SELECT a FROM t LIMIT 50%", "SELECT * FROM (\nSELECT a FROM t LIMIT 50%\n) AS baton_capped LIMIT 11"),
    ("postgres", "SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", "SELECT a FROM t UNION SELECT b FROM u ORDER BY 1\nLIMIT 11"),
    ("postgres", "WITH w AS (SELECT a FROM t LIMIT 99999) SELECT a FROM w",
     "WITH w AS (SELECT a FROM t LIMIT 99999) SELECT a FROM w\nLIMIT 11"),
    ("duckdb", "FROM t", "FROM t\nLIMIT 11"),
    ("postgres", "SELECT $$;$$ AS semi", "SELECT $$;$$ AS semi\nLIMIT 11"),
    ("postgres", "EXPLAIN SELECT a FROM t", None),
    ("postgres", "VALUES (1), (2)", None),
    ("postgres", "SELECT 1; SELECT 2", None),
    ("sqlite", "SELECT a FROM t OFFSET 2", None),
])
def test_cap_rows_edits_only_the_top_level_limit(dialect, sql, capped):
    assert cap_rows(sql, dialect, 11) == capped
