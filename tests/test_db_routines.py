"""Definer routines in the catalog, ``baton db check`` / ``baton db grant`` on them (issue 24), on
the real servers; and how the check resolves the names a statement calls (no server needed).

``db check`` exits 1 for a role that may EXECUTE a superuser-owned SECURITY DEFINER function,
however EXECUTE reaches it (PUBLIC's default grant, a direct grant, a granted role), and for a
MariaDB account that may EXECUTE a root-defined SQL SECURITY DEFINER routine; an invoker
routine, or a definer routine whose owner holds nothing more than the role, does not fail it.
``db grant`` prints the ``REVOKE EXECUTE ... FROM PUBLIC`` for the flagged routines only and
``--apply`` runs them (after which the role passes), and is all or nothing: a schema that does
not exist, or a statement failing half-way, leaves no role behind.
"""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from baton.cli import build_app
from baton.errors import ConfigurationError
from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.grants import apply_grant_statements, grant_statements
from baton.specialists.sql.routines import RoutineCatalog, allowed_keys, inspect_routines
from baton.specialists.sql.safety import RelationPolicy, check_safety
from baton.specialists.sql.safety.definer import definer_refusal
from definer_rig import mysql_definer, pg_definer, run  # noqa: F401  (fixtures)
from least_privilege import drop_reader_role

WS_DEFINERS = ("ws.exec_sql", "ws.order_total", 'ws."MixedCase"')


def await_(awaitable):
    import asyncio

    return asyncio.run(awaitable)


def _check(url: str, *extra: str):
    return CliRunner().invoke(build_app(), ["db", "check", *extra, url])


def _lock_down(db, *keep: str) -> None:
    """Revoke EXECUTE from PUBLIC on every definer function of the rig but ``keep``."""
    functions = {"ws.exec_sql": "ws.exec_sql(text)", "public.leak": "public.leak()", "ws.order_total": "ws.order_total()",
                 'ws."MixedCase"': 'ws."MixedCase"()'}
    db.admin(*(f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC" for name, signature in functions.items()
               if name not in keep))


# --- the catalog ------------------------------------------------------------------------------


def test_postgres_catalog_lists_definer_routines_with_owner_rights_and_how_execute_reaches_the_role(pg_definer):
    conn = SQLConnection(pg_definer.reader.url, id="routines", schema="ws")
    try:
        catalog = inspect_routines(conn)
    finally:
        conn.close()
    by_name = {r.qualified: r for r in catalog.routines}
    assert set(by_name) >= {"ws.exec_sql", "public.leak", "ws.order_total", "ws.MixedCase"}
    assert "ws.twice" not in by_name  # an invoker routine: not a definer one
    exec_sql = by_name["ws.exec_sql"]
    assert exec_sql.definer and not exec_sql.own and exec_sql.elevated
    assert exec_sql.owner_risks == ("superuser",) and exec_sql.executable_via == ("PUBLIC",)
    assert (exec_sql.language, exec_sql.volatility, exec_sql.arguments) == ("plpgsql", "volatile", "q text")
    assert catalog.refused() >= {("ws", "exec_sql"), ("public", "leak"), ("ws", "MixedCase")}
    assert ("ws", "exec_sql") not in catalog.refused(["ws.exec_sql"])
    assert ("ws", "MixedCase") in catalog.refused(["ws.mixedcase"])  # unquoted folds, as the server folds
    assert ("ws", "MixedCase") not in catalog.refused(['ws."MixedCase"'])


def test_a_definer_routine_owned_by_the_role_itself_is_its_own_rights(pg_definer):
    owner = f"baton_owner_{uuid.uuid4().hex[:8]}"
    pg_definer.admin(f"CREATE ROLE {owner}", f"GRANT {owner} TO {pg_definer.reader.name}",
                     "CREATE FUNCTION ws.mine() RETURNS int LANGUAGE sql SECURITY DEFINER AS $f$ SELECT 1 $f$",
                     f"ALTER FUNCTION ws.mine() OWNER TO {owner}")
    try:
        conn = SQLConnection(pg_definer.reader.url, id="own", schema="ws")
        try:
            mine = next(r for r in inspect_routines(conn).routines if r.name == "mine")
        finally:
            conn.close()
        assert mine.definer and mine.own and not mine.runs_as_another and not mine.elevated
    finally:
        pg_definer.admin("DROP FUNCTION ws.mine()", f"DROP ROLE {owner}")


# --- baton db check -----------------------------------------------------------------------------


@pytest.mark.parametrize("via", ["public", "direct", "granted role"])
def test_db_check_fails_a_role_that_may_execute_a_superuser_definer_function(pg_definer, via):
    group = f"baton_grp_{uuid.uuid4().hex[:8]}"
    reader = pg_definer.reader.name
    if via != "public":
        _lock_down(pg_definer)
        if via == "direct":
            pg_definer.admin(f"GRANT EXECUTE ON FUNCTION ws.exec_sql(text) TO {reader}")
        else:
            pg_definer.admin(f"CREATE ROLE {group}", f"GRANT EXECUTE ON FUNCTION ws.exec_sql(text) TO {group}",
                             f"GRANT {group} TO {reader}")
    try:
        result = _check(pg_definer.reader.url)
        assert result.exit_code == 1, result.output
        assert "exec_sql" in result.output and "SECURITY DEFINER" in result.output
        as_json = json.loads(_check(pg_definer.reader.url, "--json").output)
        assert as_json["critical"] and not as_json["role_critical"]
        flagged = {r["qualified"]: r for r in as_json["definer_routines"] if r["elevated"]}
        assert set(flagged) == ({"ws.exec_sql", "public.leak", "ws.order_total", "ws.MixedCase"} if via == "public"
                                else {"ws.exec_sql"})
        expected_via = {"public": "PUBLIC", "direct": "granted to the role", "granted role": f"role {group}"}[via]
        assert flagged["ws.exec_sql"]["executable_via"] == [expected_via]
    finally:
        if via == "granted role":
            pg_definer.admin(f"REVOKE ALL ON FUNCTION ws.exec_sql(text) FROM {group}", f"DROP ROLE {group}")


def test_db_check_passes_invoker_routines_and_definers_whose_owner_holds_no_more(pg_definer):
    plain = f"baton_plain_{uuid.uuid4().hex[:8]}"
    _lock_down(pg_definer)
    pg_definer.admin(f"CREATE ROLE {plain}", "CREATE FUNCTION ws.plain() RETURNS int LANGUAGE sql SECURITY DEFINER "
                     "AS $f$ SELECT 1 $f$", f"ALTER FUNCTION ws.plain() OWNER TO {plain}")
    try:
        result = _check(pg_definer.reader.url)
        assert result.exit_code == 0, result.output
        assert "ws.plain" in result.output and "OK" in result.output  # listed: calls to it are still refused
    finally:
        pg_definer.admin("DROP FUNCTION ws.plain()", f"DROP ROLE {plain}")


def test_db_check_fails_a_mariadb_account_that_may_execute_a_root_defined_definer_routine(mysql_definer):
    result = _check(mysql_definer.reader.url)
    assert result.exit_code == 1, result.output
    assert "peek" in result.output and "twice" not in result.output
    run(mysql_definer.admin_url, f"REVOKE EXECUTE ON FUNCTION {mysql_definer.name}.peek "
                                 f"FROM '{mysql_definer.reader.name}'@'%'")
    assert _check(mysql_definer.reader.url).exit_code == 0  # the invoker routine alone is fine


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_db_check_fails_on_a_database_file_that_does_not_exist(tmp_path, engine):
    missing = tmp_path / "nope" / f"shop.{engine}"
    result = _check(f"{engine}:///{missing}")
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1 and "no database file" in result.output
    assert not missing.exists() and not missing.parent.exists()


# --- baton db grant -----------------------------------------------------------------------------


def test_db_grant_prints_the_public_revokes_for_flagged_routines_only_and_apply_runs_them(pg_definer):
    plain = f"baton_plain_{uuid.uuid4().hex[:8]}"
    pg_definer.admin(f"CREATE ROLE {plain}", "CREATE FUNCTION ws.plain() RETURNS int LANGUAGE sql SECURITY DEFINER "
                     "AS $f$ SELECT 1 $f$", f"ALTER FUNCTION ws.plain() OWNER TO {plain}")
    role = f"baton_g_{uuid.uuid4().hex[:8]}"
    runner, app = CliRunner(), build_app()
    try:
        printed = runner.invoke(app, ["db", "grant", pg_definer.admin_url, "--schema", "ws", "--role", role])
        assert printed.exit_code == 0, printed.output
        revokes = [line for line in printed.output.splitlines() if "FROM PUBLIC" in line]
        assert sorted(revokes) == sorted([
            'REVOKE EXECUTE ON ROUTINE ws."MixedCase"() FROM PUBLIC;', "REVOKE EXECUTE ON ROUTINE public.leak() FROM PUBLIC;",
            "REVOKE EXECUTE ON ROUTINE ws.exec_sql(q text) FROM PUBLIC;",
            "REVOKE EXECUTE ON ROUTINE ws.order_total() FROM PUBLIC;"]), printed.output
        assert run(pg_definer.admin_url, "SELECT has_function_privilege('public', 'ws.exec_sql(text)', 'EXECUTE')") \
            == [(True,)]  # printing changed nothing
        applied = runner.invoke(app, ["db", "grant", pg_definer.admin_url, "--schema", "ws", "--role", role, "--apply"])
        assert applied.exit_code == 0, applied.output
        assert run(pg_definer.admin_url, "SELECT has_function_privilege('public', 'ws.exec_sql(text)', 'EXECUTE'), "
                   "has_function_privilege('public', 'ws.plain()', 'EXECUTE'), "
                   "has_function_privilege('public', 'ws.twice(int)', 'EXECUTE')") == [(False, True, True)]
        [(settings,)] = run(pg_definer.admin_url, "SELECT array_to_string(setconfig, ' ') FROM pg_db_role_setting "
                            f"WHERE setrole = '{role}'::regrole AND setdatabase = 0")
        for limit in ("statement_timeout=30s", "temp_file_limit=256MB", "idle_in_transaction_session_timeout=60s"):
            assert limit in settings  # the role's own limits, which a session cannot raise past temp_file_limit
        url = sa.make_url(pg_definer.admin_url).set(username=role).render_as_string(hide_password=False)
        assert _check(url).exit_code == 0  # nothing elevated left; ws.plain listed, calls still refused
    finally:
        drop_reader_role(role, pg_definer.admin_url)
        pg_definer.admin("DROP FUNCTION ws.plain()", f"DROP ROLE {plain}")


def test_db_grant_takes_a_definer_routine_granted_to_the_role_back(pg_definer):
    reader = pg_definer.reader
    _lock_down(pg_definer)
    pg_definer.admin(f"GRANT EXECUTE ON FUNCTION ws.exec_sql(text) TO {reader.name}")
    assert _check(reader.url).exit_code == 1
    apply_grant_statements(pg_definer.admin_url, grant_statements(pg_definer.admin_url, "ws", reader.name,
                                                                  reader.password))
    assert _check(reader.url).exit_code == 0


def _role_exists(admin_url: str, role: str) -> bool:
    if admin_url.startswith("postgresql"):
        return bool(run(admin_url, f"SELECT 1 FROM pg_roles WHERE rolname = '{role}'"))
    return bool(run(admin_url, f"SELECT 1 FROM mysql.user WHERE User = '{role}'"))


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_db_grant_apply_on_a_missing_schema_leaves_nothing_behind(kind, postgres_url, mysql_url):
    admin_url = postgres_url if kind == "postgres" else mysql_url
    role, schema = f"baton_g_{uuid.uuid4().hex[:8]}", f"baton_missing_{uuid.uuid4().hex[:8]}"
    try:
        result = CliRunner().invoke(build_app(), ["db", "grant", admin_url, "--schema", schema, "--role", role, "--apply"])
        assert result.exit_code == 2 and "does not exist" in result.output, result.output
        assert not _role_exists(admin_url, role)
    finally:
        drop_reader_role(role, admin_url)


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_db_grant_failing_half_way_rolls_back_or_drops_the_new_account(kind, postgres_url, mysql_url):
    admin_url = postgres_url if kind == "postgres" else mysql_url
    role, schema = f"baton_g_{uuid.uuid4().hex[:8]}", f"baton_half_{uuid.uuid4().hex[:8]}"
    run(admin_url, f"CREATE {'SCHEMA' if kind == 'postgres' else 'DATABASE'} {schema}")
    try:
        statements = grant_statements(admin_url, schema, role, "pw", flavor="mariadb" if kind == "mysql" else None)
        broken = statements[:3] + ["SELECT no_such_function_anywhere()"] + statements[3:]
        account = (role, "%") if kind == "mysql" else None
        with pytest.raises(Exception) as failed:
            apply_grant_statements(admin_url, broken, schema=schema, account=account)
        assert "no_such_function_anywhere" in str(failed.value)
        assert not _role_exists(admin_url, role)
        with pytest.raises(ConfigurationError):  # the schema is checked before anything runs
            apply_grant_statements(admin_url, statements, schema=schema + "_nope", account=account)
        assert not _role_exists(admin_url, role)
    finally:
        drop_reader_role(role, admin_url)
        run(admin_url, f"DROP {'SCHEMA' if kind == 'postgres' else 'DATABASE'} IF EXISTS {schema}"
            + (" CASCADE" if kind == "postgres" else ""))


# --- names, resolved as the server resolves them (no server) ----------------------------------

PG_REFUSED = frozenset({("ws", "exec_sql"), ("public", "leak"), ("ws", "MixedCase"), ("pg_catalog", "evil")})


@pytest.mark.parametrize("sql, refused", [
    ("SELECT ws.exec_sql('x')", ("ws", "exec_sql")),
    ("SELECT WS.EXEC_SQL('x')", ("ws", "exec_sql")),  # unquoted names fold
    ('SELECT "ws"."exec_sql"(\'x\')', ("ws", "exec_sql")),
    ("SELECT exec_sql('x')", ("ws", "exec_sql")),  # the search path: pg_catalog, then ws
    ("SELECT evil()", ("pg_catalog", "evil")),
    ("SELECT public.leak()", ("public", "leak")),
    ("SELECT leak()", None),  # public is not on the pinned search path: that is another function
    ('SELECT ws."MixedCase"()', ("ws", "MixedCase")),
    ("SELECT ws.mixedcase()", None),  # folds to a name that is not the quoted one
    ("SELECT o.exec_sql FROM ws.orders o", ("ws", "exec_sql")),  # functional notation: exec_sql(o)
    ("SELECT (o).exec_sql FROM ws.orders o", ("ws", "exec_sql")),
    ("SELECT other.exec_sql('x')", None),
    ("SELECT 'ws.exec_sql()' AS note", None),  # a string is not a call
])
def test_postgres_names_resolve_as_the_server_does(sql, refused):
    found = definer_refusal(sql, "postgres", PG_REFUSED, "ws")
    assert (found is not None and refused is not None and f"{refused[0]}.{refused[1]}()" in found[1]) or \
        (found is None and refused is None), found


@pytest.mark.parametrize("sql, refused", [
    ("SELECT peek('/etc/hostname')", True),
    ("SELECT db1.peek('x')", True),
    ("SELECT `DB1`.`PEEK`('x')", True),
    ("SELECT Peek /* c */ ('x')", True),
    ("SELECT other.peek('x')", False),
    ("SELECT peek FROM t", False),  # a column, not a call
    ("SELECT 'peek(1)'", False),
])
def test_mysql_names_resolve_as_the_server_does(sql, refused):
    assert (definer_refusal(sql, "mysql", frozenset({("db1", "peek")}), "db1") is not None) is refused


def test_the_check_refuses_definer_calls_inside_sql_given_as_text_and_only_with_a_policy():
    policy = RelationPolicy(frozenset({"ws"}), "ws", definer_routines=PG_REFUSED)
    nested = "SELECT query_to_xml('SELECT ws.exec' || '_sql(''SELECT 1'')', true, false, '')"
    assert check_safety(nested, "postgres", relations=policy).rule == "definer_routine"
    assert check_safety("SELECT ws.exec_sql(chr(83))", "postgres", relations=policy).rule == "definer_routine"
    assert check_safety("SELECT ws.exec_sql(chr(83))", "postgres").safe  # without the catalog: unknown to the check


def test_allowed_names_are_schema_qualified_and_read_as_the_engine_reads_them():
    assert allowed_keys(["ws.f", 'ws."F"', ' "My Schema" . "g" '], "postgres") == {("ws", "f"), ("ws", "F"),
                                                                                    ("My Schema", "g")}
    assert allowed_keys(["Db.F", "`d`.`x`"], "mysql") == {("Db", "F"), ("d", "x")}
    for bad in ("f", "ws.", "a.b.c", "ws.f; DROP"):
        with pytest.raises(ConfigurationError):
            allowed_keys([bad], "postgres")
    assert RoutineCatalog("sqlite").refused(["a.b"]) == frozenset()


# --- --allow-function on the command line ----------------------------------------------------


def test_baton_ask_refuses_a_definer_call_unless_allowed_by_name(pg_definer, tmp_path, monkeypatch):
    from baton.llm import FunctionModel
    from baton.llm.testing import tool_call
    from baton.messages import LLMResponse

    def model(messages, tools):
        if any(t.name == "run_sql" for t in tools):
            if messages[-1].role == "tool":
                return messages[-1].content
            return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT ws.order_total() AS total_amount"})])
        if messages[-1].role == "tool":
            return messages[-1].content
        return LLMResponse(tool_calls=[tool_call("database", {"question": messages[-1].content})])

    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("baton.cli.main_commands._model", lambda: FunctionModel(model))
    runner, app = CliRunner(), build_app()
    url = pg_definer.reader.url
    refused = runner.invoke(app, ["ask", "--database", url, "--json", "What is the order total?"])
    assert "definer_routine" in refused.output or "SECURITY DEFINER" in refused.output, refused.output
    assert "42" not in json.dumps(json.loads(refused.stdout).get("table") or {})
    allowed = runner.invoke(app, ["ask", "--database", url, "--allow-function", "ws.order_total", "--json",
                                  "What is the order total?"])
    assert allowed.exit_code == 0, allowed.output
    assert "42" in allowed.stdout
    bad = runner.invoke(app, ["ask", "--database", url, "--allow-function", "order_total", "What is the order total?"])
    assert bad.exit_code == 2 and "schema-qualified" in bad.output


def test_baton_serve_passes_allowed_functions_to_the_database_connection(tmp_path, monkeypatch):
    import sqlite3

    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as made:
        made.execute("CREATE TABLE orders (id INTEGER)")
    served = []
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_API_KEYS", raising=False)
    monkeypatch.setattr("baton.cli.main_commands._model", lambda: None)
    monkeypatch.setattr("baton.cli.serving.serve_app", lambda app, *a, **k: served.append(app))
    result = CliRunner().invoke(build_app(), ["serve", "--database", f"sqlite:///{db}", "--allow-function", "main.f",
                                              "--allow-function", 'main."G"'])
    assert result.exit_code == 0, result.output
    [app] = served
    [agent] = [t.agent for t in app.state.workspaces.get("database").orchestrator.agent_tools.values()]
    assert agent.connection.options.allow_functions == ("main.f", 'main."G"')


def test_mariadb_routines_granted_to_public_are_found_revoked_by_db_grant_and_then_pass(mysql_definer):
    db, reader = mysql_definer.name, mysql_definer.reader
    run(mysql_definer.admin_url, f"REVOKE EXECUTE ON FUNCTION {db}.peek FROM '{reader.name}'@'%'",
        f"GRANT EXECUTE ON FUNCTION {db}.peek TO PUBLIC")
    try:  # a routine granted to PUBLIC by name is hidden from ROUTINES, yet callable: found from SHOW GRANTS
        result = _check(reader.url, "--json")
        assert result.exit_code == 1, result.output
        [flagged] = [r for r in json.loads(result.output)["definer_routines"] if r["elevated"]]
        assert (flagged["schema"], flagged["name"]) == (db, "peek")
        printed = CliRunner().invoke(build_app(), ["db", "grant", mysql_definer.admin_url, "--schema", db,
                                                   "--role", reader.name, "--flavor", "mariadb"])
        assert f"REVOKE EXECUTE ON FUNCTION `{db}`.`peek` FROM PUBLIC;" in printed.output, printed.output
        applied = CliRunner().invoke(build_app(), ["db", "grant", mysql_definer.admin_url, "--schema", db,
                                                   "--role", reader.name, "--flavor", "mariadb", "--apply"])
        assert applied.exit_code == 0, applied.output
        assert run(mysql_definer.admin_url, f"SELECT max_statement_time FROM mysql.user WHERE User = '{reader.name}'") \
            == [(30,)]  # the account's own statement time
        assert _check(reader.url).exit_code == 0
    finally:
        try:
            run(mysql_definer.admin_url, f"REVOKE EXECUTE ON FUNCTION {db}.peek FROM PUBLIC")
        except Exception:
            pass  # revoked by the test already


async def test_routines_are_read_once_per_connection_with_the_role_and_feed_its_policy(pg_definer, monkeypatch):
    import asyncio

    from baton.specialists.sql import privileges

    reads = []
    real = privileges.inspect_routines
    monkeypatch.setattr(privileges, "inspect_routines", lambda connection: reads.append(1) or real(connection))
    conn = SQLConnection(pg_definer.reader.url, id="once", schema="ws", allow_functions=("ws.order_total",))
    try:
        assert conn.relation_policy.definer_routines == frozenset()  # not read before the first statement
        await asyncio.gather(*(conn.query("SELECT ws.twice(1) AS n") for _ in range(4)))
        await conn.query("SELECT 1 AS n")
        assert reads == [1]
        assert privileges.routine_catalog(conn) is not None and privileges.role_report(conn) is not None
        assert conn.relation_policy.definer_routines == {("ws", "exec_sql"), ("public", "leak"), ("ws", "MixedCase")}
    finally:
        await conn.aclose()


def test_db_check_fails_a_mariadb_account_whose_role_may_execute_a_root_defined_definer_routine(mysql_definer):
    db, reader = mysql_definer.name, mysql_definer.reader
    role = f"baton_r_{uuid.uuid4().hex[:8]}"
    run(mysql_definer.admin_url, f"REVOKE EXECUTE ON FUNCTION {db}.peek FROM '{reader.name}'@'%'",
        f"CREATE ROLE {role}", f"GRANT EXECUTE ON FUNCTION {db}.peek TO {role}", f"GRANT {role} TO '{reader.name}'@'%'")
    try:  # not the default role: hidden from ROUTINES until SET ROLE, which the account may do
        result = _check(reader.url, "--json")
        assert result.exit_code == 1, result.output
        [flagged] = [r for r in json.loads(result.output)["definer_routines"] if r["elevated"]]
        assert (flagged["name"], flagged["executable_via"]) == ("peek", [f"role {role}"])
        for default in (None, role):  # the inspections SET ROLE: the next request gets the login's role back
            if default:
                run(mysql_definer.admin_url, f"SET DEFAULT ROLE {role} FOR '{reader.name}'@'%'")
            conn = SQLConnection(reader.url, id="role-put-back", pool_size=1)
            try:
                assert (await_(conn.execute_readonly("SELECT CURRENT_ROLE() AS r"))).rows == [[default]]
            finally:
                conn.close()
    finally:
        run(mysql_definer.admin_url, f"DROP ROLE IF EXISTS {role}")


def test_connection_options_refuse_an_allowed_function_that_is_not_schema_qualified(tmp_path):
    with pytest.raises(ConfigurationError):
        SQLConnection(f"sqlite:///{tmp_path / 'x.sqlite'}", id="bad", allow_functions=("exec_sql",))
