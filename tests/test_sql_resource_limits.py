"""What one hostile query can cost this process, on the real engines (``limits.py``).

Each bomb must end with a typed ``resource_limit`` error, or with a result that is within
its byte budget and says it was cut; the connection must answer the next request. Sizes
and types are asserted, never memory or time (``bench/sql_memory_bombs.py`` measures RSS).
On the servers the connections log in as a least-privilege reader (``make_db``), except
where a superuser is the point of the test.
"""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from baton.errors import ConfigurationError
from baton.specialists.sql.classify import MAX_MESSAGE_CHARS, ErrorClass, SQLExecutionError
from baton.specialists.sql.connection import ConnectionOptions
from sql_test_databases import KINDS, make_db  # noqa: F401  (fixture)

EMPTY = "CREATE TABLE filler (x INTEGER)"  # the file-based engines need a database to open
ROW_LIMIT = 1_000_000


async def refused(conn, sql: str) -> SQLExecutionError:
    with pytest.raises(SQLExecutionError) as caught:
        await conn.execute_readonly(sql)
    return caught.value


async def still_answers(conn) -> None:
    assert (await conn.execute_readonly("SELECT 41 + 1")).rows == [[42]]


# --- the bombs of the issue, as written, with the default options ------------------------------

ISSUE_BOMBS = {
    "sqlite": ("SELECT printf('%.*c',300000000,'x')", "SQLITE_TOOBIG"),
    "duckdb": ("SELECT string_agg(repeat('x', 1000000), '') FROM range(1000)", "OutOfMemoryException"),
    "mysql": ("SELECT repeat('x', 100000000)", "1301"),  # the server's NULL for a value over max_allowed_packet
    # 2 x 20 MB instead of the issue's 2 x 200 MB: the same refusal, without 400 MB of server work per test run
    "postgres": ("SELECT repeat('x', 20000000), repeat('y', 20000000)", "RowTooLarge"),
}


@pytest.mark.parametrize("kind", KINDS)
async def test_the_issue_memory_bombs_end_in_a_typed_resource_limit_error(make_db, kind):
    db = make_db(kind, EMPTY)
    conn = db.connection(pool_size=1)
    sql, code = ISSUE_BOMBS[kind]
    error = await refused(conn, sql)
    assert error.error_class is ErrorClass.RESOURCE_LIMIT and not error.error_class.retryable
    assert error.error.code == code
    await still_answers(conn)


# --- one row over max_row_bytes: refused before it is materialised here ----------------------

WIDE_ROW = {  # two values of 600 kB: each under the 1 MB row limit, the row over it
    "postgres": ("SELECT repeat('x', 600000) AS a, repeat('y', 600000) AS b", "RowTooLarge"),
    "mysql": ("SELECT REPEAT('x', 600000) AS a, REPEAT('y', 600000) AS b", "2020"),
    "sqlite": ("SELECT replace(hex(zeroblob(300000)), '00', 'xx') AS a, replace(hex(zeroblob(300000)), '00', 'yy') AS b",
               "SQLITE_TOOBIG"),
}


@pytest.mark.parametrize("kind", sorted(WIDE_ROW))
async def test_a_row_of_values_each_under_the_limit_is_refused_as_a_whole(make_db, kind):
    db = make_db(kind, EMPTY)
    conn = db.connection(pool_size=1, max_row_bytes=ROW_LIMIT)
    sql, code = WIDE_ROW[kind]
    error = await refused(conn, sql)
    assert (error.error_class, error.error.code) == (ErrorClass.RESOURCE_LIMIT, code)
    await still_answers(conn)
    # one such value alone fits the row limit: it is returned, cut to the byte budget and marked
    single = await conn.execute_readonly(sql.split(" AS a")[0] + " AS a", byte_cap=1000)
    assert single.truncated and len(single.rows[0][0]) <= 1000


STORED_WIDE = {  # the same refusal for values read from a table, not computed
    "postgres": ("CREATE TABLE docs (a TEXT, b TEXT)", "INSERT INTO docs SELECT repeat('x', 600000), repeat('y', 600000)"),
    "mysql": ("CREATE TABLE docs (a LONGTEXT, b LONGTEXT)", "INSERT INTO docs SELECT REPEAT('x', 600000), REPEAT('y', 600000)"),
    "sqlite": ("CREATE TABLE docs (a TEXT, b TEXT)",
               "INSERT INTO docs SELECT replace(hex(zeroblob(300000)), '00', 'xx'), replace(hex(zeroblob(300000)), '00', 'yy')"),
}


@pytest.mark.parametrize("kind", sorted(STORED_WIDE))
async def test_a_stored_row_over_the_limit_is_refused_and_its_columns_alone_are_not(make_db, kind):
    db = make_db(kind, *STORED_WIDE[kind])
    conn = db.connection(pool_size=1, max_row_bytes=ROW_LIMIT)
    error = await refused(conn, "SELECT a, b FROM docs")
    assert error.error_class is ErrorClass.RESOURCE_LIMIT
    result = await conn.execute_readonly("SELECT a FROM docs", byte_cap=100)
    assert result.truncated and result.rows[0][0].startswith("xxx") and len(result.rows[0][0]) <= 100


async def test_postgres_a_compressed_value_is_measured_as_sent_not_as_stored(make_db):
    """20 MB of 'x' is stored compressed in a few hundred kB: the guard reads its text size."""
    db = make_db("postgres", "CREATE TABLE docs (body TEXT)", "INSERT INTO docs SELECT repeat('x', 20000000)")
    engine = db.admin()
    with engine.connect() as c:
        stored = c.exec_driver_sql(f"SELECT pg_column_size(docs.*) FROM {db.schema}.docs AS docs").scalar()
    engine.dispose()
    assert stored < ConnectionOptions().max_row_bytes  # the stored size alone would let it through
    conn = db.connection(pool_size=1)
    error = await refused(conn, "SELECT body FROM docs")
    assert (error.error_class, error.error.code) == (ErrorClass.RESOURCE_LIMIT, "RowTooLarge")
    assert "20000000" in error.error.message or "20000002" in error.error.message


async def test_postgres_bytes_are_measured_in_their_text_form(make_db):
    """400 kB of bytea travel as 800 kB of hex: over a 600 kB limit."""
    db = make_db("postgres")
    conn = db.connection(max_row_bytes=600_000)
    error = await refused(conn, "SELECT decode(repeat('00', 400000), 'hex') AS b")
    assert error.error_class is ErrorClass.RESOURCE_LIMIT
    assert (await conn.execute_readonly("SELECT decode(repeat('00', 200000), 'hex') AS b", byte_cap=10)).truncated


@pytest.mark.parametrize("sql", [
    "SELECT repeat('x', 2000000) AS baton_row",  # the guard's own alias as a column
    "SELECT * FROM (SELECT repeat('x', 2000000) AS v) AS baton_query",
    "WITH w AS (SELECT repeat('x', 2000000) AS v) SELECT v FROM w",
    "VALUES (repeat('x', 2000000))",
    "(SELECT repeat('x', 2000000)) UNION ALL (SELECT 'y')",
    "SELECT * FROM (VALUES (repeat('x', 2000000))) AS v (x)",
    "SELECT repeat('x', 2000000);  -- trailing comment",
])
async def test_postgres_every_shape_of_query_meets_the_row_guard(make_db, sql):
    db = make_db("postgres")
    conn = db.connection(max_row_bytes=ROW_LIMIT)
    error = await refused(conn, sql)
    assert (error.error_class, error.error.code) == (ErrorClass.RESOURCE_LIMIT, "RowTooLarge")


@pytest.mark.parametrize("sql", [
    "SELECT 1 AS a) AS z CROSS JOIN (SELECT repeat('x', 2000000) AS b",  # closing the wrapper early
    "SELECT repeat('x', 2000000) AS a) AS z, (SELECT 1 AS b",
    "SELECT 1; SELECT repeat('x', 2000000)",
])
async def test_postgres_text_that_would_escape_the_wrapper_runs_unwrapped_and_fails_there(make_db, sql):
    db = make_db("postgres")
    conn = db.connection(max_row_bytes=ROW_LIMIT)
    error = await refused(conn, sql)
    assert error.error_class is ErrorClass.SYNTAX_ERROR


async def test_postgres_small_constant_rows_and_explain_are_untouched(make_db):
    db = make_db("postgres", "CREATE TABLE t (a INTEGER, a2 TEXT)", "INSERT INTO t VALUES (1, 'x'), (2, NULL)")
    conn = db.connection(max_row_bytes=ROW_LIMIT)
    same = await conn.execute_readonly("SELECT 1 AS a, 1 AS a, NULL AS n")
    assert same.columns == ["a", "a", "n"] and same.rows == [[1, 1, None]]
    empty = await conn.execute_readonly("SELECT a, a2 FROM t WHERE false")
    assert (empty.rows, empty.columns, empty.column_types) == ([], ["a", "a2"], ["int4", "text"])
    ordered = await conn.execute_readonly("SELECT a FROM t ORDER BY a DESC")
    assert ordered.rows == [[2], [1]]
    plan = await conn.execute_readonly("EXPLAIN SELECT repeat('x', 2000000)")
    assert plan.rows and "Result" in plan.rows[0][0]


# --- many rows: the byte budget ends the result; a half-read connection is not reused --------

SESSION_ID = {"postgres": "pg_backend_pid()", "mysql": "CONNECTION_ID()"}
MANY_WIDE = {
    "postgres": "SELECT pg_backend_pid(), repeat('x', 50000) FROM generate_series(1, 5000)",
    "mysql": "SELECT CONNECTION_ID(), REPEAT('x', 50000) FROM seq_1_to_5000",
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x, printf('%.*c', 50000, 'x') FROM c",
    "duckdb": "SELECT range, repeat('x', 50000 + (range % 2)::INT) FROM range(5000)",
}


@pytest.mark.parametrize("kind", KINDS)
async def test_many_wide_rows_stop_at_the_byte_budget_and_say_so(make_db, kind):
    db = make_db(kind, EMPTY)
    conn = db.connection(pool_size=1, byte_cap=500_000)
    result = await conn.execute_readonly(MANY_WIDE[kind])
    kept = sum(len(str(v)) for row in result.rows for v in row)
    assert result.truncated and 8 <= len(result.rows) <= 10 and kept <= 500_000
    await still_answers(conn)


@pytest.mark.parametrize("kind", sorted(SESSION_ID))
async def test_a_result_left_half_read_closes_its_connection_but_the_row_cap_does_not(make_db, kind):
    db = make_db(kind, EMPTY)
    # MariaDB: the administrator, whose sessions are reset and kept (the reader account limits its
    # connections, so each of its requests gets a new session anyway: session_reset.py)
    conn = db.connection(pool_size=1, byte_cap=500_000, row_cap=3, allow_privileged_role=kind == "mysql")
    session = f"SELECT {SESSION_ID[kind]}"
    before = (await conn.execute_readonly(session)).rows[0][0]
    capped = await conn.execute_readonly(MANY_WIDE[kind].replace("50000", "10"))  # stopped by the row cap
    assert capped.truncated and len(capped.rows) == 3 and capped.rows[0][0] == before
    assert (await conn.execute_readonly(session)).rows[0][0] == before  # the LIMIT ended it: kept
    cut = await conn.execute_readonly(MANY_WIDE[kind], row_cap=1000)  # stopped by bytes, rows still coming
    assert cut.truncated and cut.rows[0][0] == before
    assert (await conn.execute_readonly(session)).rows[0][0] != before  # not drained: a new session


# --- engine settings ----------------------------------------------------------------------------


async def test_postgres_work_mem_is_set_per_statement_and_temp_file_limit_where_the_role_may(make_db):
    db = make_db("postgres", EMPTY)
    settings = "SELECT current_setting('work_mem'), current_setting('temp_file_limit')"
    options = {"postgres_work_mem": "5MB", "postgres_temp_file_limit": "7MB"}
    reader = db.connection(**options)
    work_mem, temp_limit = (await reader.execute_readonly(settings)).rows[0]
    assert work_mem == "5MB" and temp_limit != "7MB"  # the reader keeps its role's limit (baton db grant)
    superuser = db.connection(allow_privileged_role=True, **options)
    assert (await superuser.execute_readonly(settings)).rows == [["5MB", "7MB"]]
    spill = "SELECT count(*) FROM (SELECT DISTINCT md5(g::text) FROM generate_series(1, 600000) AS g) AS s"
    error = await refused(superuser, spill)
    assert (error.error_class, error.error.code) == (ErrorClass.RESOURCE_LIMIT, "53400")  # temp_file_limit exceeded


async def test_duckdb_memory_limit_and_threads_are_the_connections_and_locked(make_db):
    db = make_db("duckdb", EMPTY)
    conn = db.connection(duckdb_memory_limit="64MiB", duckdb_threads=1)
    result = await conn.execute_readonly("SELECT current_setting('memory_limit'), current_setting('threads')")
    assert result.rows == [["64.0 MiB", 1]]
    error = await refused(conn, "SELECT list(repeat('x', 50000 + (range % 2)::INT)) FROM range(2000)")
    assert error.error_class is ErrorClass.RESOURCE_LIMIT


async def test_postgres_hashes_get_work_mem_not_twice_it(make_db):
    db = make_db("postgres", EMPTY)
    conn = db.connection()  # the least-privilege reader: a setting any role may SET
    result = await conn.execute_readonly("SELECT current_setting('hash_mem_multiplier'), current_setting('work_mem')")
    assert result.rows == [["1", "32MB"]]


DUCKDB_SPILL = "SELECT count(*) FROM (SELECT range, random() AS r, repeat('x', 100) AS p FROM range(3000000) ORDER BY r)"


async def test_duckdb_spills_to_a_folder_of_batons_own_bounded_and_removed_on_close(make_db):
    db = make_db("duckdb", EMPTY)
    options = {"duckdb_memory_limit": "32MB", "duckdb_max_temp_directory_size": "16MB", "duckdb_threads": 1}
    conn, other = db.connection(**options), db.connection(**options)  # two on one file: one DuckDB instance
    settings = ("SELECT current_setting('temp_directory'), current_setting('max_temp_directory_size'), "
                "current_setting('memory_limit'), current_setting('threads')")
    folder, spill, memory, threads = (await conn.execute_readonly(settings)).rows[0]
    assert (spill, memory, threads) == ("15.2 MiB", "30.5 MiB", 1)
    database = Path(sa.engine.make_url(db.url).database)
    assert Path(folder).parent == Path(tempfile.gettempdir()) and Path(folder) != Path(f"{database}.tmp")
    assert stat.S_IMODE(Path(folder).stat().st_mode) == 0o700
    assert (await other.execute_readonly(settings)).rows[0][0] == folder
    error = await refused(conn, DUCKDB_SPILL)  # 3 million sorted rows: ~400 MB to spill
    assert error.error_class is ErrorClass.RESOURCE_LIMIT
    assert not Path(f"{database}.tmp").exists()  # DuckDB's default, beside the user's file, is not used
    await still_answers(conn)
    conn.close()
    assert Path(folder).is_dir()  # the other connection still holds it
    other.close()
    assert not Path(folder).exists()


def test_a_duckdb_spill_folder_someone_else_made_is_refused(tmp_path):
    from baton.specialists.sql.limits import duckdb_temp_directory, release_duckdb_temp_directory

    database = str(tmp_path / "x.duckdb")
    folder = duckdb_temp_directory(database)
    release_duckdb_temp_directory(folder)
    Path(folder).mkdir(mode=0o777)
    Path(folder).chmod(0o777)  # planted, writable by others
    try:
        with pytest.raises(ConfigurationError):
            duckdb_temp_directory(database)
    finally:
        Path(folder).rmdir()


async def test_mysql_a_value_the_server_replaced_by_null_is_an_error_not_a_null(make_db):
    db = make_db("mysql", "CREATE TABLE t (id INT)", "INSERT INTO t VALUES (1), (2)")
    conn = db.connection()
    error = await refused(conn, "SELECT id, REPEAT('x', 20000000) FROM t")
    assert (error.error_class, error.error.code) == (ErrorClass.RESOURCE_LIMIT, "1301")
    assert (await conn.execute_readonly("SELECT id, NULL FROM t ORDER BY id")).rows == [[1, None], [2, None]]


@pytest.mark.parametrize(("kind", "sql"), [
    ("postgres", "SELECT repeat('x', 3000000)::int"),
    ("duckdb", "SELECT (repeat('x', 3000000) || (random() * 0)::INT::VARCHAR)::INT"),
])
async def test_an_error_quoting_a_huge_value_is_cut_before_it_travels_on(make_db, kind, sql):
    db = make_db(kind, EMPTY)
    conn = db.connection()
    error = await refused(conn, sql)
    assert len(error.error.message) <= MAX_MESSAGE_CHARS and len(str(error)) <= MAX_MESSAGE_CHARS + 100


@pytest.mark.parametrize("bad", [
    {"max_row_bytes": 0}, {"duckdb_threads": 0}, {"duckdb_memory_limit": "lots"},
    {"duckdb_max_temp_directory_size": "256MB'; SET threads=64; --"},
    {"duckdb_memory_limit": "1GB'; SET threads=64; --"}, {"postgres_work_mem": "32MB; DROP TABLE t"},
    {"postgres_temp_file_limit": "-1"},
])
def test_limits_that_are_not_plain_sizes_are_refused(bad):
    with pytest.raises(ConfigurationError):
        ConnectionOptions(**bad)


THIRD_ROW_TOO_WIDE = {  # rows 1 and 2 are small, row 3 is over the 1 MB row limit
    "postgres": "SELECT g, CASE WHEN g = 3 THEN repeat('x', 2000000) ELSE 'small' END FROM generate_series(1, 5) AS g",
    "mysql": "SELECT seq, CASE WHEN seq = 3 THEN CONCAT(REPEAT('x', 600000), REPEAT('y', 600000)) ELSE 'small' END "
             "FROM seq_1_to_5 ORDER BY seq",
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5) "
              "SELECT x, CASE WHEN x = 3 THEN zeroblob(2000000) ELSE 'small' END FROM c",
}


@pytest.mark.parametrize("kind", sorted(THIRD_ROW_TOO_WIDE))
async def test_a_row_over_the_limit_after_others_ends_the_result_as_truncated(make_db, kind):
    db = make_db(kind, EMPTY)
    conn = db.connection(pool_size=1, max_row_bytes=ROW_LIMIT)
    result = await conn.execute_readonly(THIRD_ROW_TOO_WIDE[kind])
    kept = 1 if kind == "sqlite" else 2  # the sqlite3 module steps one row ahead of the row it returns
    assert result.truncated and result.rows == [[1, "small"], [2, "small"]][:kept]
    await still_answers(conn)


# --- SQLite: a statement's column count is remembered, and corrected when the schema changes -----


async def test_sqlite_a_statement_run_again_is_not_compiled_again_to_count_its_columns(make_db):
    db = make_db("sqlite", "CREATE TABLE sales (month TEXT, revenue INTEGER)", "INSERT INTO sales VALUES ('2025-01', 1)")
    conn = db.connection(pool_size=1)
    compiled: list[str] = []
    raw = conn.engine.raw_connection()
    raw.dbapi_connection.set_trace_callback(compiled.append)
    raw.close()
    for _ in range(3):
        assert (await conn.execute_readonly("SELECT month, revenue FROM sales")).rows == [["2025-01", 1]]
    assert sum("LIMIT 0" in statement for statement in compiled) == 1  # the probe, on the first run only
    assert sum("FROM sales" in statement for statement in compiled) == 4


async def test_sqlite_a_statement_widened_by_a_schema_change_is_bounded_by_its_new_width(make_db):
    import sqlalchemy as sa

    db = make_db("sqlite", "CREATE TABLE docs (a TEXT)", "INSERT INTO docs VALUES ('x')")
    conn = db.connection(pool_size=1, max_row_bytes=ROW_LIMIT)
    assert (await conn.execute_readonly("SELECT * FROM docs")).rows == [["x"]]  # one column, remembered
    with db.admin().begin() as owner:  # the owner widens the table: two 600 kB values a row, 1.2 MB
        owner.execute(sa.text("ALTER TABLE docs ADD COLUMN b TEXT"))
        owner.execute(sa.text("UPDATE docs SET a = replace(hex(zeroblob(300000)), '00', 'xx'), "
                              "b = replace(hex(zeroblob(300000)), '00', 'yy')"))
        owner.execute(sa.text("INSERT INTO docs SELECT a, b FROM docs"))
    try:
        first = await conn.execute_readonly("SELECT * FROM docs")
    except SQLExecutionError as error:
        assert error.error_class is ErrorClass.RESOURCE_LIMIT
    else:  # the rows after the first compiled are held to the new width: none over the limit
        assert first.truncated and not any(len(a) + len(b) > ROW_LIMIT for a, b in first.rows)
    error = await refused(conn, "SELECT * FROM docs")  # the next run knows its two columns from the start
    assert (error.error_class, error.error.code) == (ErrorClass.RESOURCE_LIMIT, "SQLITE_TOOBIG")
    await still_answers(conn)
