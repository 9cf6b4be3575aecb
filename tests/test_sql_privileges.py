"""Least privilege, checked at connect (issue 11, item 2), on the real local servers.

The servers log in as ``postgres`` (a superuser) and ``root`` (ALL PRIVILEGES): `baton db
check` must say so (exit 1), the agent path must refuse them unless told otherwise, and the
role that `baton db grant --apply` creates must pass (exit 0) and, on its own, with the
parser check bypassed (``execute_readonly``), be refused what a read-only transaction lets a
superuser do: read server files, write them, end other sessions, create replication slots,
read password hashes and other sessions' SQL.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from baton.agents import AgentContext, AgentTool
from baton.cli import build_app
from baton.errors import ConfigurationError
from baton.events import RecordingTracker
from baton.llm.testing import ScriptedModel, tool_call
from baton.messages import LLMResponse
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.classify import ErrorClass, SQLExecutionError
from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.grants import grant_statements, masked
from baton.specialists.sql.privileges import OPT_IN_ENV, PrivilegedRoleError, inspect_role, privileged_role_opt_in, role_report
from baton.specialists.sql.role_mysql import classify_grant, parse_grant_line
from baton.specialists.sql.role_report import Risk
from least_privilege import drop_reader_role, mysql_reader, postgres_reader, reader_role  # noqa: F401  (fixtures)
from sql_test_databases import make_db  # noqa: F401  (fixture)

SHOP = ("CREATE TABLE orders (id INTEGER PRIMARY KEY, amount INTEGER)", "INSERT INTO orders VALUES (1, 10), (2, 32)")


def _admin(url: str) -> sa.Engine:
    return sa.create_engine(url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")


def _run(url: str, *statements: str) -> None:
    engine = _admin(url)
    try:
        with engine.connect() as c:
            for statement in statements:
                c.exec_driver_sql(statement)
    finally:
        engine.dispose()


@pytest.fixture
def server(request):
    """(kind, admin URL, a fresh schema/database holding SHOP); dropped after."""
    kind = request.param
    admin_url = request.getfixturevalue("postgres_url" if kind == "postgres" else "mysql_url")
    name = f"baton_pv_{uuid.uuid4().hex[:10]}"
    if kind == "postgres":
        _run(admin_url, f"CREATE SCHEMA {name}", *(s.replace("orders", f"{name}.orders") for s in SHOP))
    else:
        _run(admin_url, f"CREATE DATABASE {name}", *(s.replace("orders", f"{name}.orders") for s in SHOP))
    yield kind, admin_url, name
    _run(admin_url, f"DROP SCHEMA IF EXISTS {name} CASCADE" if kind == "postgres" else f"DROP DATABASE IF EXISTS {name}")


# --- baton db check / baton db grant, end to end --------------------------------------------


@pytest.mark.parametrize("server", ["postgres", "mysql"], indirect=True)
def test_db_check_fails_the_superuser_and_passes_the_role_db_grant_created(server, monkeypatch):
    kind, admin_url, schema = server
    runner, app = CliRunner(), build_app()
    role, password = f"baton_cli_{uuid.uuid4().hex[:8]}", f"pw'{uuid.uuid4().hex[:6]}%"
    monkeypatch.setenv("BATON_TEST_ROLE_PASSWORD", password)
    try:
        printed = runner.invoke(app, ["db", "grant", admin_url, "--schema", schema, "--role", role,
                                      "--password-env", "BATON_TEST_ROLE_PASSWORD"])
        assert printed.exit_code == 0, printed.output
        assert role in printed.output and "********" in printed.output and password not in printed.output
        applied = [runner.invoke(app, ["db", "grant", admin_url, "--schema", schema, "--role", role,
                                       "--password-env", "BATON_TEST_ROLE_PASSWORD", "--apply"]) for _ in range(2)]
        assert [r.exit_code for r in applied] == [0, 0], applied[-1].output  # a re-run does not fail
        assert password not in applied[0].output

        superuser = runner.invoke(app, ["db", "check", admin_url])
        assert superuser.exit_code == 1, superuser.output
        assert "superuser" in superuser.output and "CRITICAL" in superuser.output

        url = sa.make_url(admin_url).set(username=role, password=password)
        if kind == "mysql":
            url = url.set(database=schema)
        reader = runner.invoke(app, ["db", "check", url.render_as_string(hide_password=False)])
        assert reader.exit_code == 0, reader.output
        assert "OK" in reader.output and password not in reader.output
        as_json = runner.invoke(app, ["db", "check", "--json", url.render_as_string(hide_password=False)])
        assert as_json.exit_code == 0 and '"critical": false' in as_json.output
    finally:
        drop_reader_role(role, admin_url)


def test_db_check_on_a_file_engine_passes_and_a_bad_url_is_a_usage_error(tmp_path):
    import sqlite3

    path = tmp_path / "shop.sqlite"
    sqlite3.connect(path).close()
    runner, app = CliRunner(), build_app()
    ok = runner.invoke(app, ["db", "check", f"sqlite:///{path}"])
    assert ok.exit_code == 0 and "read-only" in ok.output
    assert runner.invoke(app, ["db", "check", "oracle://x@y/z"]).exit_code == 2
    assert runner.invoke(app, ["db", "check", "postgresql+psycopg://nobody@127.0.0.1:1/none"]).exit_code == 2


# --- the agent path ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
async def test_the_agent_path_refuses_the_superuser_unless_opted_in_and_runs_as_the_reader(make_db, kind, caplog):
    db = make_db(kind, *SHOP)
    schema = {"schema": db.schema} if db.schema else {}
    superuser = SQLConnection(db.admin_url, **schema)
    try:
        with pytest.raises(PrivilegedRoleError) as refused:
            await superuser.query("SELECT count(*) FROM orders")
        assert isinstance(refused.value, ConfigurationError)
        assert Risk.SUPERUSER in refused.value.risks and Risk.READ_SERVER_FILES in refused.value.risks
        assert "baton db grant" in str(refused.value) and "allow_privileged_role" in str(refused.value)
        # concurrent first queries: all refused, one cached report
        results = await asyncio.gather(*(superuser.query("SELECT 1") for _ in range(6)), return_exceptions=True)
        assert all(isinstance(r, PrivilegedRoleError) for r in results)
        assert role_report(superuser) is refused.value.report

        model = ScriptedModel([LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT count(*) FROM orders"})]), "2"])
        context = AgentContext(user_question="", llm_router=model, tracker=RecordingTracker())
        result = await AgentTool(SQLAgent(superuser)).execute(context, "How many orders?", None, "call-1")
        assert result.status == "error" and result.error_type == "PrivilegedRoleError"
        assert result.metadata["attempts"] == 1  # never retried
    finally:
        superuser.close()

    opted_in = SQLConnection(db.admin_url, allow_privileged_role=True, **schema)
    try:
        with caplog.at_level(logging.WARNING, logger="baton.specialists.sql.privileges"):
            for _ in range(3):
                assert (await opted_in.query("SELECT count(*) FROM orders")).rows == [[2]]
        warnings = [r for r in caplog.records if r.name == "baton.specialists.sql.privileges"]
        assert len(warnings) == 1 and "superuser" in warnings[0].getMessage()  # once per connection
    finally:
        opted_in.close()

    reader = db.connection()
    model = ScriptedModel([LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT count(*) AS n FROM orders"})]),
                           "There are 2 orders."])
    result = await SQLAgent(reader).run(AgentContext(user_question="", llm_router=model, tracker=RecordingTracker()),
                                        question="How many orders?")
    assert result.status == "success", result.error
    assert result.results.rows == [[2]]
    assert not role_report(reader).critical


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
async def test_file_engines_have_no_roles_and_are_not_refused(make_db, kind):
    db = make_db(kind, *SHOP)
    conn = db.connection()
    assert (await conn.query("SELECT count(*) FROM orders")).rows == [[2]]
    report = inspect_role(conn)
    assert not report.critical and not report.findings and "read-only" in report.notes[0]


def test_the_fixture_roles_are_least_privilege(postgres_reader, mysql_reader, reader_role, postgres_url):
    for role, schema in [(postgres_reader, postgres_reader.schema), (mysql_reader, None)]:
        report = _report(role.url, schema)
        assert not report.findings and not report.critical, report
    extra = reader_role(postgres_url, postgres_reader.schema)  # a second reader on the same schema
    assert extra.name != postgres_reader.name and not _report(extra.url, extra.schema).findings


# --- what the reader role alone refuses (parser bypassed) ---------------------------------------


async def test_postgres_reader_role_alone_refuses_privileged_functions(make_db):
    db = make_db("postgres", *SHOP)
    admin = _admin(db.admin_url)
    slot = f"baton_slot_{uuid.uuid4().hex[:8]}"
    with admin.connect() as other:
        other_pid = other.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        reader = db.connection()
        superuser = db.connection(allow_privileged_role=True)
        # the same statements run under the superuser inside the read-only transaction...
        assert (await superuser.execute_readonly("SELECT pg_read_file('PG_VERSION')")).rows[0][0].strip().isdigit()
        assert (await superuser.execute_readonly("SELECT current_setting('data_directory')")).rows[0][0].startswith("/")
        # ...and the reader role alone refuses each (SQLSTATE 42501)
        for sql in ["SELECT pg_read_file('PG_VERSION')", "SELECT pg_read_binary_file('/etc/passwd')",
                    "SELECT pg_ls_dir('.')", "SELECT lo_import('/etc/passwd')",
                    "SELECT lo_export(0::oid, '/tmp/baton_lo_" + uuid.uuid4().hex + "')",
                    f"SELECT pg_terminate_backend({other_pid})", f"SELECT pg_cancel_backend({other_pid})",
                    f"SELECT pg_create_physical_replication_slot('{slot}')",
                    f"SELECT pg_create_logical_replication_slot('{slot}', 'test_decoding')",
                    "SELECT rolname, rolpassword FROM pg_authid", "SELECT * FROM pg_shadow",
                    "SELECT * FROM pg_hba_file_rules", "SELECT current_setting('data_directory')",
                    "SELECT pg_reload_conf()", "SELECT pg_stat_reset()"]:
            with pytest.raises(SQLExecutionError) as caught:
                await reader.execute_readonly(sql)
            assert caught.value.error_class is ErrorClass.PERMISSION_DENIED, (sql, caught.value.error)
            assert caught.value.error.code == "42501", (sql, caught.value.error)
        # other sessions' SQL is hidden from it, and the other session survived
        seen = await reader.execute_readonly(f"SELECT query FROM pg_stat_activity WHERE pid = {other_pid}")
        assert seen.rows == [["<insufficient privilege>"]]
        assert other.exec_driver_sql("SELECT 1").scalar() == 1
    with admin.connect() as c:
        assert c.exec_driver_sql(f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'").scalar() == 0
    admin.dispose()


async def test_mariadb_reader_account_alone_refuses_files_and_privilege_tables(make_db, tmp_path):
    db = make_db("mysql", *SHOP)
    admin = _admin(db.admin_url)
    with admin.connect() as other:
        other_id = other.exec_driver_sql("SELECT CONNECTION_ID()").scalar()
        reader = db.connection()
        superuser = db.connection(allow_privileged_role=True)
        assert (await superuser.execute_readonly("SELECT LOAD_FILE('/etc/passwd') IS NOT NULL")).rows == [[1]]
        assert (await reader.execute_readonly("SELECT LOAD_FILE('/etc/passwd')")).rows == [[None]]  # no FILE: NULL
        target = f"/tmp/baton_outfile_{uuid.uuid4().hex}"
        for sql in [f"SELECT 'x' INTO OUTFILE '{target}'", f"SELECT 'x' INTO DUMPFILE '{target}'",
                    "SELECT User, Password FROM mysql.user", "SELECT * FROM mysql.global_priv",
                    "SELECT * FROM mysql.servers"]:
            with pytest.raises(SQLExecutionError) as caught:
                await reader.execute_readonly(sql)
            assert caught.value.error_class is ErrorClass.PERMISSION_DENIED, (sql, caught.value.error)
        assert not os.path.exists(target)
        seen = await reader.execute_readonly(f"SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = {other_id}")
        assert seen.rows == []  # without PROCESS, other sessions are invisible
    admin.dispose()


# --- what inspection finds, grant by grant ---------------------------------------------------------


POSTGRES_GRANTS = [
    ("GRANT pg_read_server_files TO {role}", Risk.READ_SERVER_FILES, True),
    ("GRANT pg_write_server_files TO {role}", Risk.WRITE_SERVER_FILES, True),
    ("GRANT pg_execute_server_program TO {role}", Risk.RUN_PROGRAMS, True),
    ("GRANT pg_signal_backend TO {role}", Risk.SIGNAL_SESSIONS, True),
    ("GRANT pg_monitor TO {role}", Risk.READ_SECRETS, True),
    ("GRANT pg_read_all_data TO {role}", Risk.READ_SECRETS, True),
    ("GRANT EXECUTE ON FUNCTION pg_read_file(text) TO {role}", Risk.READ_SERVER_FILES, True),
    ("GRANT EXECUTE ON FUNCTION lo_export(oid, text) TO {role}", Risk.WRITE_SERVER_FILES, True),
    ("GRANT SELECT ON pg_authid TO {role}", Risk.READ_SECRETS, True),
    ("ALTER ROLE {role} REPLICATION", Risk.REPLICATION, True),
    ("GRANT postgres TO {role}", Risk.SUPERUSER, True),  # reachable with SET ROLE
    ("ALTER ROLE {role} BYPASSRLS", Risk.BYPASS_ROW_SECURITY, False),
    ("GRANT INSERT ON {schema}.orders TO {role}", Risk.CAN_WRITE, False),
    ("ALTER TABLE {schema}.orders OWNER TO {role}", Risk.OWNS_OBJECTS, False),
    ("GRANT CREATE ON SCHEMA {schema} TO {role}", Risk.CAN_CREATE, False),
]


@pytest.mark.parametrize("grant, risk, critical", POSTGRES_GRANTS)
def test_postgres_inspection_finds_each_privilege(make_db, grant, risk, critical):
    db = make_db("postgres", *SHOP)
    role = sa.make_url(db.url).username
    assert not _report(db.url, db.schema).findings  # the reader starts clean
    _run(db.admin_url, grant.format(role=role, schema=db.schema))
    try:
        report = _report(db.url, db.schema)
    finally:  # privileges on catalog objects are revoked by hand (pinned objects record no dependency)
        if " ON FUNCTION " in grant or " ON pg_authid " in grant:
            _run(db.admin_url, grant.replace("GRANT", "REVOKE").replace(" TO ", " FROM ").format(role=role, schema=db.schema))
    assert risk in report.risks, report
    assert report.critical is critical, report


def test_postgres_createrole_is_critical_before_16(make_db):
    db = make_db("postgres", *SHOP)
    role = sa.make_url(db.url).username
    _run(db.admin_url, f"ALTER ROLE {role} CREATEROLE")
    report = _report(db.url, db.schema)
    version = int(report.server.split()[1].split(".")[0])
    assert (Risk.GRANT_ROLES in report.risks) is (version < 16) and report.critical is (version < 16)


MYSQL_GRANTS = [
    ("GRANT FILE ON *.* TO {account}", {Risk.READ_SERVER_FILES, Risk.WRITE_SERVER_FILES}, True),
    ("GRANT PROCESS ON *.* TO {account}", {Risk.READ_SECRETS}, True),
    ("GRANT SUPER ON *.* TO {account}", {Risk.SUPERUSER, Risk.SIGNAL_SESSIONS}, True),
    ("GRANT SHUTDOWN ON *.* TO {account}", {Risk.SHUTDOWN_SERVER}, True),
    ("GRANT CONNECTION ADMIN ON *.* TO {account}", {Risk.SIGNAL_SESSIONS}, True),
    ("GRANT REPLICATION SLAVE ON *.* TO {account}", {Risk.REPLICATION}, True),
    ("GRANT SELECT ON *.* TO {account}", {Risk.READ_SECRETS}, True),
    ("GRANT SELECT ON mysql.user TO {account}", {Risk.READ_SECRETS}, True),
    ("GRANT UPDATE ON mysql.* TO {account}", {Risk.EDIT_PRIVILEGES}, True),
    ("GRANT RELOAD ON *.* TO {account}", {Risk.SERVER_ADMIN}, False),
    ("GRANT INSERT, DELETE ON {database}.* TO {account}", {Risk.CAN_WRITE}, False),
]


@pytest.mark.parametrize("grant, risks, critical", MYSQL_GRANTS)
def test_mariadb_inspection_finds_each_privilege(make_db, grant, risks, critical):
    db = make_db("mysql", *SHOP)
    url = sa.make_url(db.url)
    account = f"'{url.username}'@'%%'"  # %%: PyMySQL formats the statement
    assert not _report(db.url).findings
    _run(db.admin_url, grant.format(account=account, database=url.database))
    report = _report(db.url)
    assert risks <= set(report.risks), report
    assert report.critical is critical, report


def test_mariadb_privileges_held_through_a_role_are_found(make_db):
    db = make_db("mysql", *SHOP)
    url = sa.make_url(db.url)
    outer, inner = f"baton_role_{uuid.uuid4().hex[:8]}", f"baton_role_{uuid.uuid4().hex[:8]}"
    try:
        _run(db.admin_url, f"CREATE ROLE {outer}", f"CREATE ROLE {inner}", f"GRANT FILE ON *.* TO {inner}",
             f"GRANT {inner} TO {outer}", f"GRANT {outer} TO '{url.username}'@'%%'")
        report = _report(db.url)
        assert Risk.READ_SERVER_FILES in report.risks and report.critical, report
        assert Risk.UNVERIFIED not in report.risks
    finally:
        _run(db.admin_url, f"DROP ROLE IF EXISTS {outer}", f"DROP ROLE IF EXISTS {inner}")


def _report(url: str, schema: str | None = None):
    conn = SQLConnection(url, schema=schema)
    try:
        return inspect_role(conn)
    finally:
        conn.close()


# --- grant_statements and SHOW GRANTS parsing, hostile inputs ----------------------------------------


@pytest.mark.parametrize("role, schema", [
    ('x"; DROP ROLE postgres; --', "public"), ("reader", "s; DROP SCHEMA public"), ("a b", "s"), ("", "s"),
    ("r", 'x" CASCADE'), ("ok", "x`; DROP DATABASE test; --"),
])
@pytest.mark.parametrize("url", ["postgresql+psycopg://a@h/db", "mysql+pymysql://a@h/db"])
def test_grant_statements_refuse_names_that_are_not_plain_identifiers(role, schema, url):
    with pytest.raises(ConfigurationError):
        grant_statements(url, schema, role)


def test_grant_statements_quote_the_password_and_mask_it():
    password = "it's %s; DROP ROLE x; --"
    statements = grant_statements("postgresql+psycopg://a@h/db", "s", "r", password)
    assert any("PASSWORD 'it''s %s; DROP ROLE x; --'" in s for s in statements)
    assert not any(password in s for s in masked(statements, password))
    with pytest.raises(ConfigurationError):
        grant_statements("mysql+pymysql://a@h/db", "s", "r", "back\\slash")
    with pytest.raises(ConfigurationError):
        grant_statements("mysql+pymysql://a@h/db", "s", "r", host="%'; DROP USER root; --")
    with pytest.raises(ConfigurationError):
        grant_statements("sqlite:///x.db", "s", "r")
    mariadb = grant_statements("mysql+pymysql://a@h/db", "s", "r", flavor="mariadb")
    mysql = grant_statements("mysql+pymysql://a@h/db", "s", "r", flavor="mysql")
    assert any("MAX_STATEMENT_TIME" in s for s in mariadb) and not any("MAX_STATEMENT_TIME" in s for s in mysql)


@pytest.mark.parametrize("line, privileges, target, grantee", [
    ("GRANT USAGE ON *.* TO `a ON b`@`%` IDENTIFIED BY PASSWORD '* TO ON *.*'", ("USAGE",), "*.*", "a ON b@%"),
    ("GRANT SELECT (`to`, `on`), INSERT (`x`) ON `d`.`t` TO `u`@`h`", ("SELECT", "INSERT"), "d.t", "u@h"),
    ("GRANT EXECUTE ON PROCEDURE `d`.`p` TO 'u'@'localhost'", ("EXECUTE",), "PROCEDURE d.p", "u@localhost"),
    ("GRANT SELECT ON `we``ird`.* TO `u`@`%` WITH GRANT OPTION", ("SELECT",), "we`ird.*", "u@%"),
])
def test_show_grants_lines_parse_with_quotes_and_keywords_inside_names(line, privileges, target, grantee):
    grant = parse_grant_line(line)
    assert (grant.privileges, grant.target, grant.grantee) == (privileges, target, grantee)


def test_a_file_grant_is_critical_unless_mysql_disables_file_access():
    grant = parse_grant_line("GRANT FILE ON *.* TO `u`@`%`")
    assert all(f.critical for f in classify_grant(grant, flavor="mariadb", secure_file_priv=None))
    assert all(f.critical for f in classify_grant(grant, flavor="mysql", secure_file_priv=""))
    limited = classify_grant(grant, flavor="mysql", secure_file_priv="/var/lib/mysql-files/")
    assert all(f.critical for f in limited) and "/var/lib/mysql-files/" in limited[0].sentence
    assert not any(f.critical for f in classify_grant(grant, flavor="mysql", secure_file_priv=None))


def test_the_opt_in_reads_the_flag_or_the_environment(monkeypatch, capsys):
    from baton.cli.db import unsafe_privileged_role_opt_in

    monkeypatch.delenv(OPT_IN_ENV, raising=False)
    assert not privileged_role_opt_in() and not unsafe_privileged_role_opt_in(False)
    assert capsys.readouterr().err == ""
    assert unsafe_privileged_role_opt_in(True)
    assert "--unsafe-allow-privileged-role" in capsys.readouterr().err
    for value, expected in [("1", True), ("true", True), ("0", False), ("", False), ("no", False)]:
        monkeypatch.setenv(OPT_IN_ENV, value)
        assert privileged_role_opt_in() is expected
    monkeypatch.setenv(OPT_IN_ENV, "1")
    assert unsafe_privileged_role_opt_in(False)
    assert "warning" in capsys.readouterr().err  # printed at every start, environment or flag


# --- baton ask: the refusal, and the opt-in flag / environment variable ------------------------------


@pytest.mark.parametrize("server", ["mysql"], indirect=True)
def test_baton_ask_refuses_a_privileged_database_role_unless_the_user_opts_in(server, tmp_path, monkeypatch):
    from baton.llm import FunctionModel

    _, admin_url, database = server
    url = sa.make_url(admin_url).set(database=database).render_as_string(hide_password=False)

    def model(messages, tools):
        if any(t.name == "run_sql" for t in tools):
            if messages[-1].role == "tool":
                return "Counted."
            return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT count(*) AS n_orders FROM orders"})])
        if messages[-1].role == "tool":
            return messages[-1].content
        return LLMResponse(tool_calls=[tool_call("database", {"question": messages[-1].content})])

    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(OPT_IN_ENV, raising=False)
    monkeypatch.setattr("baton.cli.main_commands._model", lambda: FunctionModel(model))
    runner, app = CliRunner(), build_app()

    refused = runner.invoke(app, ["ask", "--database", url, "How many orders?"])
    assert "baton db grant" in refused.output and "n_orders" not in refused.output
    assert "warning" not in refused.stderr

    flagged = runner.invoke(app, ["ask", "--database", url, "--unsafe-allow-privileged-role", "How many orders?"])
    assert flagged.exit_code == 0, flagged.output
    assert "n_orders" in flagged.stdout and "--unsafe-allow-privileged-role" in flagged.stderr

    monkeypatch.setenv(OPT_IN_ENV, "1")
    from_env = runner.invoke(app, ["ask", "--database", url, "--json", "How many orders?"])
    assert from_env.exit_code == 0, from_env.output
    assert "n_orders" in from_env.stdout and "warning" in from_env.stderr
    import json

    json.loads(from_env.stdout)  # the warning went to standard error: --json stays parseable


@pytest.mark.parametrize("flag", [False, True])
def test_baton_serve_passes_the_opt_in_to_the_database_connection(flag, tmp_path, monkeypatch):
    import sqlite3

    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as made:  # a database with a table: serve refuses an empty one
        made.execute("CREATE TABLE orders (id INTEGER)")
    served = []
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(OPT_IN_ENV, raising=False)
    monkeypatch.delenv("BATON_API_KEYS", raising=False)
    monkeypatch.setattr("baton.cli.main_commands._model", lambda: None)
    monkeypatch.setattr("baton.cli.serving.serve_app", lambda app, *a, **k: served.append(app))  # serve nothing
    result = CliRunner().invoke(build_app(), ["serve", "--database", f"sqlite:///{db}",
                                              *(["--unsafe-allow-privileged-role"] if flag else [])])
    assert result.exit_code == 0, result.output
    [app] = served
    [agent] = [t.agent for t in app.state.workspaces.get("database").orchestrator.agent_tools.values()]
    assert agent.connection.options.allow_privileged_role is flag
    assert ("--unsafe-allow-privileged-role" in result.stderr) is flag
