"""Red team, MariaDB/MySQL: every statement of ``redteam_corpus/mysql.toml`` through the guarded
path on the real server, as a least-privilege user and as root, and nothing happens.

Each case runs on a pool of one connection between two snapshots of every canary
(``redteam_mysql_rig.py``); then a "next request" on the same pooled connection reads its session
(user variables, session variables, named locks, a leftover prepared statement or HANDLER, a
temporary table shadowing ``rt_rows``, a seeded ``RAND()``). A case passes when the statement
raised a typed error or returned a result, and no canary changed, nothing returned holds a
secret, and the next request finds a clean session.

Decisions:
- ``SLEEP``/``BENCHMARK`` cases use small values and no timing assertion: returning at all (a
  refusal or a finished statement) is the pass; the statement timeout is the guard of last resort.
- The ``--`` + Unicode space cases put a column named by that space in a derived table, so that
  the statement is valid SQL to the server and the payload really runs when the check misses it
  (see the corpus header).
- Root runs pass ``allow_privileged_role=True`` once ``ConnectionOptions`` has it; the
  least-privilege user is the demo's, made by ``baton db grant``'s statements
  (``tests/least_privilege.py``).
"""

from __future__ import annotations

import os

import pymysql
import pytest

from baton.specialists.sql.connection import SQLConnection
from redteam_mysql_rig import MySQLRig
from redteam_support import (
    MIN_CASES,
    PooledSession,
    assert_world_writable,
    attempt,
    case_params,
    differences,
    load_corpus,
    privileged_options,
)

CASES = load_corpus("mysql")
ROLES = ["least_privilege", "superuser"]


@pytest.fixture(scope="module")
def rig():
    url = os.environ.get("BATON_TEST_MYSQL_URL")
    if not url:
        pytest.skip("BATON_TEST_MYSQL_URL is not set: the red-team module needs the MariaDB/MySQL server")
    rig = MySQLRig(url)
    try:
        rig.start()
        yield rig
    finally:
        rig.stop()


@pytest.fixture(scope="module")
def sessions(rig):
    made = {}
    for role in ROLES:
        options = privileged_options() if role == "superuser" else {}
        conn = SQLConnection(rig.url(least_privilege=role == "least_privilege"), id=f"redteam-mysql-{role}",
                             pool_size=1, statement_timeout_s=10, connection_retries=0, **options)
        made[role] = PooledSession(rig, conn)
    yield made
    for session in made.values():
        session.conn.close()


@pytest.mark.parametrize("case", case_params(CASES))
@pytest.mark.parametrize("role", ROLES)
def test_guarded_query_leaves_no_trace(rig, sessions, role, case):
    attempt(rig, sessions[role], case, "mysql", via_agent=False)


@pytest.mark.parametrize("case", case_params(CASES, agent_only=True))
@pytest.mark.parametrize("role", ROLES)
def test_agent_validate_and_run_leaves_no_trace(rig, sessions, role, case):
    attempt(rig, sessions[role], case, "mysql", via_agent=True)


def test_corpus_is_large_and_covers_every_class():
    assert len(CASES) >= MIN_CASES
    classes = {c.cls for c in CASES}
    assert classes >= {"file_read", "file_write", "secret", "stall", "lock", "session", "seed", "sequence",
                       "signal", "write", "multi", "metadata", "counter"}
    assert len({c.enc for c in CASES if c.enc.endswith("after --")}) >= 15  # Unicode spaces after --


def test_probes_see_real_side_effects(rig):
    """The snapshots are not blind: each side effect, done directly as root, shows."""
    assert_world_writable(rig.files.root)
    cases = {
        "files": f"SELECT 1 INTO OUTFILE '{rig.files.out('probe')}'",
        "rows": f"UPDATE {rig.db}.rt_rows SET name = 'changed' WHERE id = 1",
        "sequence": f"SELECT NEXTVAL({rig.db}.rt_seq)",
        "named_lock_holder": f"SELECT GET_LOCK('{rig.lock}', 0)",
        "secret_session": f"KILL QUERY {rig.secret_id}",
        "idle_session": f"KILL {rig.idle_id}",
        "global_net_read_timeout": "SET GLOBAL net_read_timeout = 31",
        "tables": f"CREATE TABLE {rig.db}.rt_extra (a INT)",
        "uuid_short_calls": "SELECT UUID_SHORT()",
    }
    for key, sql in cases.items():
        before = rig.snapshot()
        rig._run(sql)
        after = rig.snapshot()
        for _ in range(50):  # a killed query takes a moment to leave the process list
            if after[key] != before[key]:
                break
            after = rig.snapshot()
        assert any(p.startswith(key) for p in differences(before, after)), key
        if key == "named_lock_holder":
            rig._run(f"SELECT RELEASE_LOCK('{rig.lock}')")
        rig.repair(before, after)


def test_probes_find_secrets_and_dirty_sessions(rig):
    for sql in (f"SELECT authentication_string FROM mysql.user WHERE User = '{rig.lp_user}'",
                "SELECT Password FROM mysql.servers", f"SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = {rig.secret_id}",
                f"SELECT LOAD_FILE('{rig.files.file}')", f"SELECT HEX(LOAD_FILE('{rig.files.file}'))",
                "SELECT @@datadir", "SELECT @@socket", "SELECT @@plugin_dir", "SELECT @@log_error"):
        assert rig.secrets.found_in(rig._run(sql)), sql
    assert not rig.secrets.found_in(rig._run(f"SELECT * FROM {rig.db}.rt_rows"))
    with rig.connect() as dirty:
        baseline = rig.session_state(dirty)
        with dirty.cursor() as cur:
            for sql in ("SET @a = 1", "SET SESSION sql_select_limit = 1", f"SELECT GET_LOCK('{rig.lock}', 0)",
                        "PREPARE rt_stmt FROM 'SELECT 1'", "SET SESSION rand_seed1 = 1, rand_seed2 = 1",
                        "CREATE TEMPORARY TABLE rt_rows (id INT)"):
                cur.execute(sql)
        found = " ".join(rig.session_problems(rig.session_state(dirty), baseline))
    for word in ("user_variables", "session_variables", "holds_named_lock", "EXECUTE rt_stmt", "random()", "rows_seen"):
        assert word in found, word


def test_least_privilege_user_really_is(rig):
    """The least-privilege runs mean something only if the user lacks FILE, PROCESS and SUPER."""
    with rig.connect(rig.lp_user, rig.lp_password) as lp, lp.cursor() as cur:
        cur.execute("SHOW GRANTS")
        grants = " ".join(row[0] for row in cur.fetchall()).upper()
    assert "FILE" not in grants and "PROCESS" not in grants and "SUPER" not in grants and "ALL PRIVILEGES" not in grants
    with pytest.raises(pymysql.MySQLError):
        with rig.connect(rig.lp_user, rig.lp_password) as lp, lp.cursor() as cur:
            cur.execute("SELECT authentication_string FROM mysql.user")


@pytest.mark.parametrize("role", ROLES)
def test_a_reset_session_is_a_fresh_one(rig, sessions, role):
    """After the pool's reset, a session must be what a new login gets (the role's own limits
    and settings included), or whatever differs leaks from one request into the next."""
    session = sessions[role]
    assert rig.session_problems(session.baseline, session.fresh) == []
