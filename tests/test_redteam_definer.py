"""Red team, definer routines (issue 24): as the least-privilege role ``baton db grant`` makes,
a SECURITY DEFINER routine left behind by an administrator must not become a way around it.

Each attack is first run straight through the driver as the same role (the control: it works,
so the setup is real), then through Baton: the safety check refuses it (rule
``definer_routine``) once the connection knows its routines, and the guarded execution refuses
it on a fresh connection whose first statement it is (the check ran before the routines were
read). Nothing happened: no file written by ``COPY ... TO PROGRAM``, no file content, no row
of a schema outside the workspace. Invoker routines run; a definer routine allowed by name runs.
"""

from __future__ import annotations

import os
import shutil
import uuid

import pytest

from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.safety import UnsafeQueryError, check_safety
from definer_rig import as_role, mysql_definer, pg_definer  # noqa: F401  (fixtures)
from redteam_support import CanaryFiles


@pytest.fixture
def canary():
    files = CanaryFiles.create(uuid.uuid4().hex[:10])
    yield files
    shutil.rmtree(files.root, ignore_errors=True)


def _program(out: str) -> str:
    """``exec_sql``'s argument: ``COPY ... TO PROGRAM 'touch out'`` built at run time."""
    return f"chr(67) || 'OPY (SELECT 1) TO PROGRAM ''touch {out}'''"


async def _refused_everywhere(url: str, sql: str, dialect: str, rule: str = "definer_routine", **options) -> None:
    """Refused on the public path of a fresh connection (its first statement: checked before
    the routines were read), by the check once they are known, and, where the refusal is the
    definer rule, by the guarded execution alone on another fresh connection."""
    conn = SQLConnection(url, id=f"rt-{uuid.uuid4().hex[:6]}", **options)
    try:
        with pytest.raises(UnsafeQueryError):
            await conn.query(sql)
        await conn.query("SELECT 1")  # now the routines are known to the connection's check
        verdict = check_safety(sql, dialect, relations=conn.relation_policy)
        assert not verdict.safe and verdict.rule == rule, verdict
        with pytest.raises(UnsafeQueryError):
            await conn.query(sql)
    finally:
        await conn.aclose()
    if rule != "definer_routine":
        return  # another rule of the check refuses it; the guarded execution alone is not asked
    fresh = SQLConnection(url, id=f"rt-{uuid.uuid4().hex[:6]}", **options)
    try:
        with pytest.raises(UnsafeQueryError) as refused:
            await fresh.execute_readonly(sql)
        assert refused.value.verdict.rule == "definer_routine", refused.value
    finally:
        await fresh.aclose()


@pytest.mark.parametrize("call, rule", [
    ("SELECT ws.exec_sql({program})", "definer_routine"),
    ("SELECT exec_sql({program})", "definer_routine"),  # unqualified: the pinned search path is ws
    ('SELECT "exec_sql"({program})', "definer_routine"),
    ('SELECT U&"exec\\005fsql"({program})', "definer_routine"),
    ("SELECT * FROM ws.exec_sql({program}) AS r", "definer_routine"),
    ("SELECT n FROM (SELECT 1 AS n) t WHERE ws.exec_sql({program}) = 1", "definer_routine"),
    ("SELECT query_to_xml('SELECT ws.exec' || '_sql(''SELECT 1'')', true, false, '')", "definer_routine"),
    ("SELECT query_to_xml('SELECT ws.exec_sql(' || quote_literal({program}) || ')', true, false, '')", "sql_in_string"),
])
async def test_a_superuser_definer_exec_sql_cannot_run_a_program(pg_definer, canary, call, rule):
    out = canary.out(f"pg_{uuid.uuid4().hex[:8]}")
    sql = call.format(program=_program(out))
    if call == "SELECT ws.exec_sql({program})":  # the control: straight through the driver it works
        as_role(pg_definer.reader.url, sql)
        assert os.path.exists(out), "the control did not run the program: the rig proves nothing"
        os.remove(out)
    await _refused_everywhere(pg_definer.reader.url, sql, "postgres", rule, schema="ws")
    assert not os.path.exists(out)
    assert canary.listing().keys() == {canary.file.name}


@pytest.mark.parametrize("sql", [
    "SELECT public.leak()",
    "SELECT * FROM public.leak() AS s(secret)",
    'SELECT * FROM "public"."leak"()',
    "SELECT query_to_xml('SELECT public.leak()', true, false, '')",
    "SELECT query_to_xml('SELECT query_to_xml(''SELECT public.leak()'', true, false, '''')', true, false, '')",
])
async def test_a_definer_function_in_another_schema_returns_no_rows_from_outside_the_workspace(pg_definer, sql):
    assert as_role(pg_definer.reader.url, "SELECT public.leak()") == [(pg_definer.secret,)]  # the control
    await _refused_everywhere(pg_definer.reader.url, sql, "postgres", schema="ws")


async def test_postgres_invoker_routines_run_and_a_definer_routine_allowed_by_name_runs(pg_definer):
    conn = SQLConnection(pg_definer.reader.url, id="rt-allowed", schema="ws",
                         allow_functions=("ws.order_total", 'ws."MixedCase"'))
    try:
        assert (await conn.query("SELECT ws.twice(21) AS n")).rows == [[42]]
        assert (await conn.query("SELECT ws.order_total() AS n")).rows == [[42]]
        assert (await conn.query("SELECT order_total() AS n")).rows == [[42]]
        assert (await conn.query('SELECT ws."MixedCase"() AS n')).rows == [[7]]
        for still_refused in ("SELECT ws.exec_sql('SELECT 1')", "SELECT public.leak()"):
            with pytest.raises(UnsafeQueryError):
                await conn.query(still_refused)
    finally:
        await conn.aclose()
    folded = SQLConnection(pg_definer.reader.url, id="rt-folded", schema="ws", allow_functions=("ws.mixedcase",))
    try:  # an unquoted allowed name folds to lower case, as the server folds it: not "MixedCase"
        with pytest.raises(UnsafeQueryError):
            await folded.execute_readonly('SELECT ws."MixedCase"()')
    finally:
        await folded.aclose()


@pytest.mark.parametrize("call", [
    "SELECT peek('{path}')",
    "SELECT {db}.peek('{path}')",
    "SELECT `{db}`.`PEEK`('{path}')",
    "SELECT Peek ('{path}')",
    "SELECT 1 FROM orders WHERE peek('{path}') IS NOT NULL",
])
async def test_a_mariadb_definer_routine_returning_load_file_reads_no_file(mysql_definer, canary, call):
    db, url = mysql_definer.name, mysql_definer.reader.url
    sql = call.format(db=db, path=canary.file)
    control = as_role(url, f"SELECT {db}.peek('{canary.file}')")
    assert canary.content_token in str(control[0][0]), "the control read nothing: the rig proves nothing"
    await _refused_everywhere(url, sql, "mysql")


async def test_mariadb_invoker_routines_run_and_a_definer_routine_allowed_by_name_runs(mysql_definer, canary):
    db, url = mysql_definer.name, mysql_definer.reader.url
    conn = SQLConnection(url, id="rt-my-allowed")
    try:
        assert (await conn.query(f"SELECT {db}.twice(21) AS n")).rows == [[42]]
    finally:
        await conn.aclose()
    allowed = SQLConnection(url, id="rt-my-allowed2", allow_functions=(f"{db}.peek",))
    try:  # allowed knowingly: the body runs with root's rights (the documented risk)
        result = await allowed.query(f"SELECT peek('{canary.file}') AS f")
        assert canary.content_token in str(result.rows[0][0])
    finally:
        await allowed.aclose()
