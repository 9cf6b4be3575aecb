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
