"""The safety check's cost grows linearly with the statement, and a statement over the cap is
refused the same way on every surface.

No timing here (``bench/sql_check_scaling.py`` prints the times): the check counts its own
work (``safety/work.py``: characters handed to a parser or scanned, tokens and tree nodes
visited), and for each adversarial generator (``tests/sql_adversarial.py``) the count at
64,000 characters must stay within 10x the count at 8,000 (linear is 8x). A quadratic step
(the backtracking name pattern that took 12 s on 20,000 characters; climbing every table's
ancestors in a long UNION chain) shows up as 64x.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baton.specialists.sql.safety import MAX_STATEMENT_LENGTH, UnsafeQueryError, check_safety
from baton.specialists.sql.safety.lexical import called_names
from baton.specialists.sql.safety.work import counting
from sql_adversarial import GENERATORS

DIALECTS = ("postgres", "duckdb", "mysql", "sqlite")
SMALL, LARGE = 8_000, 64_000


def _work(sql: str, dialect: str) -> int:
    with counting() as count:
        check_safety(sql, dialect)
    return count.total


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("generator", sorted(GENERATORS))
def test_the_checks_work_grows_linearly(generator, dialect):
    small, large = GENERATORS[generator](SMALL), GENERATORS[generator](LARGE)
    assert len(large) <= MAX_STATEMENT_LENGTH and len(large) >= 7 * len(small)
    work_small, work_large = _work(small, dialect), _work(large, dialect)
    assert work_small >= len(small) // 2  # the count sees the text at all
    assert work_large <= 10 * work_small, (generator, dialect, work_small, work_large)


def test_a_name_without_a_parenthesis_is_read_once():
    """The old pattern re-read a long name from each of its characters (quadratic); the scan
    reads it once, and finds the same calls the pattern found."""
    text = "(" + "a" * 60_000
    with counting() as count:
        assert list(called_names(text)) == []
    assert count.scanned <= 2 * len(text)
    assert list(called_names('x pg_read_file ("/etc/passwd") "lo_import" (1) f$1(2) 9g(3) h')) == [
        "pg_read_file", "lo_import", "f$1", "g"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_statement_over_the_cap_is_refused_before_any_parser(dialect):
    at_cap = "SELECT 1" + " " * (MAX_STATEMENT_LENGTH - 8)
    assert len(at_cap) == MAX_STATEMENT_LENGTH and check_safety(at_cap, dialect).safe
    with counting() as count:
        verdict = check_safety(at_cap + " ", dialect)
    assert not verdict.safe and verdict.rule == "too_long" and "65,536" in verdict.reason
    assert count.total == 0  # nothing read it


@pytest.mark.parametrize("dialect", ("mysql", "sqlite"))
def test_a_deep_concatenation_is_a_verdict_not_a_crash(dialect):
    """A call nested 3,000 deep once raised RecursionError out of the check."""
    verdict = check_safety(GENERATORS["concat_chain"](48_000), dialect)
    assert verdict.rule in ("", "unparseable")


@pytest.mark.parametrize("dialect", ("mysql", "sqlite"))
def test_a_tree_deeper_than_sqlite_and_duckdb_allow_is_refused(dialect):
    """sqlglot reads ``1 + 1 + ...`` without recursing, but what reads its tree after the
    check does: past 1,000 levels the statement is refused, as SQLite and DuckDB refuse it."""
    assert check_safety("SELECT " + " + ".join(["1"] * 900), dialect).safe
    deep = check_safety("SELECT " + " + ".join(["1"] * 1_100), dialect)
    assert deep.rule == "unparseable" and "1,000 levels" in deep.reason


def test_the_cli_refuses_a_statement_over_the_cap(tmp_path):
    from typer.testing import CliRunner

    from baton.cli import build_app

    sql = "SELECT 1 FROM t WHERE " + " OR ".join(["a = 1"] * 12_000)
    result = CliRunner().invoke(build_app(), ["sql", "check", "--dialect", "postgres", "--json", sql])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["rule"] == "too_long"


async def test_the_mcp_check_sql_tool_refuses_a_statement_over_the_cap():
    from baton.mcp.server import MAX_SQL_CHARS, _check_sql

    sql = "SELECT " + ", ".join(["1"] * 30_000)
    assert MAX_STATEMENT_LENGTH < len(sql) <= MAX_SQL_CHARS  # the tool's own limit is not what refuses it
    from baton.agents import OrchestratorAgent
    from baton.workspace.core import Workspace

    no_connections = Workspace("w", OrchestratorAgent("o"))  # a workspace without SQL
    result = await _check_sql(no_connections, sql, "sqlite", None)
    assert not result.is_error
    assert result.structured_content["safe"] is False and result.structured_content["rule"] == "too_long"


async def test_model_sql_over_the_cap_never_reaches_the_database(tmp_path):
    from baton.specialists.sql.connection import SQLConnection

    conn = SQLConnection(f"sqlite:///{tmp_path / 'x.sqlite'}")
    try:
        with pytest.raises(UnsafeQueryError) as refused:
            await conn.query("SELECT 1 WHERE 1 IN (" + ", ".join(["1"] * 25_000) + ")")
        assert refused.value.verdict.rule == "too_long"
        assert conn._engine is None  # no connection was ever opened
    finally:
        conn.close()
