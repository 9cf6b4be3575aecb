"""The parser reads strings and comments the way each real engine does.

A safety check on SQL text is only as good as the agreement between its parser and the
engine: where sqlglot sees a string literal and the engine sees code, a statement passes
the check and runs something else. Each case here is allowed by ``check_safety`` because
sqlglot reads the dangerous-looking part as data; the real engine must return that same
data (one column, the literal text), proving nothing else ran. The last test shows why
MySQL's ``/*! ... */`` comments are refused: MariaDB executes them.
"""

from __future__ import annotations

import os
import sqlite3

import duckdb
import pytest

from baton.specialists.sql.safety import check_safety


def _server(variable: str):
    url = os.environ.get(variable)
    if not url:
        pytest.skip(f"{variable} is not set: this test needs that database server")
    import sqlalchemy

    return sqlalchemy.create_engine(url)


def _rows_on_server(variable: str, sql: str):
    engine = _server(variable)
    try:
        with engine.connect() as connection:
            return connection.exec_driver_sql(sql).fetchall()
    finally:
        engine.dispose()


POSTGRES = [
    (r"SELECT E'\' , pg_sleep(10) --'", "' , pg_sleep(10) --"),
    ("SELECT 1 /* nested /* comment */ , pg_sleep(5) */", 1),
    ("SELECT $$ ; DROP TABLE x $$", " ; DROP TABLE x "),
    ("SELECT $tag$ it's $$ pg_read_file $tag$", " it's $$ pg_read_file "),
    ("SELECT 'please DELETE later'", "please DELETE later"),
]
MYSQL = [
    (r"SELECT '\' , SLEEP(10) --'", "' , SLEEP(10) --"),
    ("SELECT '/*! , SLEEP(10) */'", "/*! , SLEEP(10) */"),
    ("SELECT 1 /* ! , SLEEP(10) */", 1),
    ("SELECT 1 # , SLEEP(10)\n", 1),
]
SQLITE = [
    (r"SELECT '\' , 2 --'", "\\"),  # no backslash escapes: the string ends, the rest is code
    ("SELECT 'a''b -- c'", "a'b -- c"),
]
DUCKDB = [
    ("SELECT 1 /* a /* b */ , getenv('HOME') -- */", 1),
    ("SELECT 'read_csv(''/etc/passwd'')'", "read_csv('/etc/passwd')"),
]


@pytest.mark.parametrize(("sql", "value"), POSTGRES)
def test_postgres_reads_it_as_the_parser_does(sql, value):
    assert check_safety(sql, "postgres").safe
    assert _rows_on_server("BATON_TEST_POSTGRES_URL", sql) == [(value,)]


@pytest.mark.parametrize(("sql", "value"), MYSQL)
def test_mariadb_reads_it_as_the_parser_does(sql, value):
    assert check_safety(sql, "mysql").safe
    assert _rows_on_server("BATON_TEST_MYSQL_URL", sql) == [(value,)]


def test_sqlite_reads_it_as_the_parser_does():
    connection = sqlite3.connect(":memory:")
    assert check_safety(SQLITE[0][0], "sqlite").safe
    assert connection.execute(SQLITE[0][0]).fetchall() == [("\\", 2)]
    assert check_safety(SQLITE[1][0], "sqlite").safe
    assert connection.execute(SQLITE[1][0]).fetchall() == [(SQLITE[1][1],)]


@pytest.mark.parametrize(("sql", "value"), DUCKDB)
def test_duckdb_reads_it_as_the_parser_does(sql, value):
    assert check_safety(sql, "duckdb").safe
    assert duckdb.connect().execute(sql).fetchall() == [(value,)]


def test_mariadb_executes_bang_comments_so_they_are_refused():
    sql = "SELECT 1 /*! + 1 */"
    assert _rows_on_server("BATON_TEST_MYSQL_URL", sql) == [(2,)]  # the "comment" ran
    verdict = check_safety(sql, "mysql")
    assert (verdict.safe, verdict.rule) == (False, "executable_comment")


# --- SQL given to functions as text (PostgreSQL) ------------------------------------------

# Each of these returned server data or took a session lock before the fix (reviewer's finding).
POSTGRES_SQL_TEXT = [
    "SELECT table_to_xml('pg_authid', true, false, '')",
    "SELECT word FROM ts_stat($$SELECT to_tsvector('simple', pg_read_file('PG_VERSION'))$$)",
    "SELECT word FROM ts_stat($$SELECT to_tsvector('simple', pg_advisory_lock(424242)::text)$$)",
]


def _advisory_locks(objid: int) -> int:
    return _rows_on_server("BATON_TEST_POSTGRES_URL",
                           f"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = {objid}")[0][0]


@pytest.mark.parametrize("sql", POSTGRES_SQL_TEXT)
async def test_postgres_functions_that_run_sql_text_are_refused_before_anything_runs(sql):
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.safety import UnsafeQueryError

    url = os.environ.get("BATON_TEST_POSTGRES_URL") or pytest.skip("BATON_TEST_POSTGRES_URL is not set")
    conn = SQLConnection(url)
    try:
        with pytest.raises(UnsafeQueryError) as refused:
            await conn.query(sql)
        assert refused.value.verdict.rule in ("dangerous_function", "sensitive_table")
        assert conn._engine is None  # no connection was ever opened: nothing reached the server
    finally:
        conn.close()
    assert _advisory_locks(424242) == 0


async def test_postgres_a_user_function_that_executes_text_is_refused_by_the_string_rule():
    """An operator's own ``exec(text)`` is on no list: the engine alone would run the query
    given as a string (shown by bypassing the parser), the string rule refuses it."""
    import uuid

    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.safety import UnsafeQueryError

    engine = _server("BATON_TEST_POSTGRES_URL")
    name = f"baton_exec_{uuid.uuid4().hex[:10]}"
    with engine.begin() as c:
        c.exec_driver_sql(f"CREATE FUNCTION public.{name}(q text) RETURNS SETOF text LANGUAGE plpgsql AS "
                          "$f$ BEGIN RETURN QUERY EXECUTE q; END $f$")
    conn = SQLConnection(engine.url, allow_privileged_role=True)  # the superuser: the read-only guard alone
    try:
        sql = f"SELECT * FROM {name}(E'\\x53ELECT current_setting(''data_directory'')')"
        bypass = await conn.execute_readonly(sql)  # the engine's read-only guard does not stop it
        assert bypass.rows and bypass.rows[0][0].startswith("/")
        with pytest.raises(UnsafeQueryError) as refused:
            await conn.query(sql)
        assert refused.value.verdict.rule == "sql_in_string"
    finally:
        conn.close()
        with engine.begin() as c:
            c.exec_driver_sql(f"DROP FUNCTION public.{name}(text)")
        engine.dispose()


@pytest.mark.parametrize("literal", [
    r"E'\x53ELECT 1'", r"E'\123ELECT 1'", r"E'\u0053ELECT 1'", r"E'it\'s \\ \t'", r"E'\\x53ELECT'", r"e'a''b'",
    r"U&'\0053ELECT 1'", r"U&'!0053ELECT !!1' UESCAPE '!'", r"U&'\+000053ELECT'", "$q$it's$q$", "'a' || 'b'",
])
def test_postgres_string_values_are_decoded_as_the_server_decodes_them(literal):
    """The string rule judges the value PostgreSQL sees, not the spelling."""
    import sqlglot

    from baton.specialists.sql.literals import constant_text

    sql = f"SELECT f({literal})"
    call = sqlglot.parse_one(sql, read="postgres").expressions[0]
    ours = constant_text(call.expressions[0], "postgres", sql)
    assert _rows_on_server("BATON_TEST_POSTGRES_URL", f"SELECT {literal}") == [(ours,)]
