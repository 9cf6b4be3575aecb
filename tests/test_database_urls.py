"""``postgres://``, ``postgresql://``, ``mysql://`` and ``mariadb://`` (no driver named, as
psql, hosting dashboards and ``DATABASE_URL`` write them) are read with the drivers Baton
installs, wherever a database or state URL is taken: the connection, ``baton db check``,
``--database`` and ``--state``. Real servers, no mocks."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.specialists.sql import ConnectionOptions, SQLConnection
from baton.specialists.sql.urls import database_url


def bare(url: str, scheme: str) -> str:
    """``url`` with its scheme (and driver) replaced by ``scheme``."""
    return f"{scheme}://{url.split('://', 1)[1]}"


def test_bare_schemes_get_the_installed_drivers():
    assert database_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert database_url("postgresql://u:p@h:5432/db").render_as_string(hide_password=False) == "postgresql+psycopg://u:p@h:5432/db"
    assert database_url("mysql://u@h/db").drivername == "mysql+pymysql"
    assert database_url("mariadb://u@h/db").drivername == "mariadb+pymysql"
    for kept in ("postgresql+psycopg2://u@h/db", "mysql+mysqldb://u@h/db", "sqlite:///x.sqlite", "duckdb:///x.duckdb"):
        assert database_url(kept).render_as_string(hide_password=False) == kept


def _select_one(url: str) -> object:
    connection = SQLConnection(url, options=ConnectionOptions(allow_privileged_role=True))  # the test servers' superusers
    try:
        return asyncio.run(connection.query("SELECT 1 AS one")).rows[0][0]
    finally:
        connection.close()


@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
def test_postgres_urls_without_a_driver_connect(postgres_url, scheme):
    assert _select_one(bare(postgres_url, scheme)) == 1


@pytest.mark.parametrize("scheme", ["mysql", "mariadb"])
def test_mysql_urls_without_a_driver_connect(mysql_url, scheme):
    assert _select_one(bare(mysql_url, scheme)) == 1


def run(*args: str, home):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200", "BATON_HOME": str(home), "BATON_MODEL": "",
                                                            "BATON_STATE_URL": "", "BATON_API_KEYS": ""})


@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
def test_db_check_reads_a_bare_postgres_url(postgres_url, scheme, tmp_path):
    result = run("db", "check", bare(postgres_url, scheme), home=tmp_path)
    # the test server's role is a superuser: the check ran and found that (exit 1), the URL was not refused (exit 2)
    assert result.exit_code == 1, result.output
    assert "superuser" in result.output and "unsupported" not in result.output and "Traceback" not in result.output


def test_ask_reads_a_bare_postgres_url(postgres_url, tmp_path):
    result = run("ask", "How many rows?", "--database", bare(postgres_url, "postgres"), home=tmp_path)
    # reached the server and its role (a superuser, refused by the privilege check), not refused as a URL
    assert result.exit_code == 2 and "superuser" in result.output and "Not a database URL" not in result.output, result.output


def test_state_reads_a_bare_postgres_url(state_db, tmp_path):
    result = run("keys", "create", "--workspace", "demo", "--label", "ci", "--state", bare(state_db, "postgres"), home=tmp_path)
    assert result.exit_code == 0, result.output
    listed = run("keys", "list", "--state", bare(state_db, "postgresql"), home=tmp_path)
    assert listed.exit_code == 0 and "ci" in listed.output, listed.output
