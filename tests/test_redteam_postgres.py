"""Red team, PostgreSQL: every statement of ``redteam_corpus/postgres.toml`` through the guarded
path on the real server, as the least-privilege role and as the superuser, and nothing happens.

Each case runs on a pool of one connection (so the next request lands on the same session),
between two snapshots of every canary (``redteam_postgres_rig.py``), then a "next request" reads
its session state. A case passes when the statement raised a typed error or returned a result,
and: no canary changed, nothing returned (rows, names, error text, the model's feedback) holds a
secret, and the next request finds the session as a fresh one would be.

Decisions:
- Superuser runs pass ``allow_privileged_role=True`` once ``ConnectionOptions`` has it: they show
  what the check and the engine guard alone let through. Least-privilege runs use the demo's
  role, made by ``baton db grant``'s statements (``tests/least_privilege.py``).
- ``dblink`` cases skip when the extension cannot be created; index cases compare raw index pages
  through ``pageinspect`` and fall back to relation sizes without it (weaker, said in the skip-free
  snapshot key ``index_pages``).
"""

from __future__ import annotations

import os

import psycopg
import pytest

from baton.specialists.sql.connection import SQLConnection
from redteam_postgres_rig import COUNTERS, PostgresRig
from redteam_support import (
    MIN_CASES,
    Case,
    PooledSession,
    assert_world_writable,
    attempt,
    case_params,
    differences,
    load_corpus,
    privileged_options,
)

CASES = load_corpus("postgres")
ROLES = ["least_privilege", "superuser"]


@pytest.fixture(scope="module")
def rig():
    url = os.environ.get("BATON_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("BATON_TEST_POSTGRES_URL is not set: the red-team module needs the PostgreSQL server")
    rig = PostgresRig(url)
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
        conn = SQLConnection(rig.url(least_privilege=role == "least_privilege"), id=f"redteam-pg-{role}", pool_size=1,
                             schema="rt", statement_timeout_s=10, connection_retries=0, **options)
        made[role] = PooledSession(rig, conn)
    yield made
    for session in made.values():
        session.conn.close()


def run_case(rig: PostgresRig, session: PooledSession, case: Case, via_agent: bool) -> None:
    if not rig.has_dblink and "dblink" in case.sql.lower():
        pytest.skip("the dblink extension is not available on this server")
    attempt(rig, session, case, "postgres", via_agent=via_agent, counters=COUNTERS)


@pytest.mark.parametrize("case", case_params(CASES))
@pytest.mark.parametrize("role", ROLES)
def test_guarded_query_leaves_no_trace(rig, sessions, role, case):
    run_case(rig, sessions[role], case, via_agent=False)


@pytest.mark.parametrize("case", case_params(CASES, agent_only=True))
@pytest.mark.parametrize("role", ROLES)
def test_agent_validate_and_run_leaves_no_trace(rig, sessions, role, case):
    run_case(rig, sessions[role], case, via_agent=True)


def test_corpus_is_large_and_covers_every_class():
    assert len(CASES) >= MIN_CASES
    classes = {c.cls for c in CASES}
    assert classes >= {"file_read", "file_write", "program", "signal", "settings", "slot", "stats", "index",
                       "sequence", "lock", "seed", "notify", "secret", "write", "multi", "metadata", "operator", "memory"}
    for cls in classes:  # several encodings per class
        assert len({c.enc for c in CASES if c.cls == cls}) >= 2, cls


def test_probes_see_real_side_effects(rig):
    """The snapshots are not blind: each side effect, done directly by the superuser, shows."""
    a = rig.admin
    assert_world_writable(rig.files.root)
    cases = {
        "index_pages": "SELECT brin_summarize_new_values('rt.brin_i')",
        "sequence": "SELECT nextval('rt.seq')",
        "slots": f"SELECT pg_create_physical_replication_slot('{rig.slot}')",
        "files": f"COPY (SELECT 1) TO '{rig.files.out('probe')}'",
        "stats_reset_db": "SELECT pg_stat_reset()",
        "conf_loaded": "SELECT pg_reload_conf()",
        "secret_session": f"SELECT pg_cancel_backend({rig.secret_pid})",
        "listen_session": f"SELECT pg_terminate_backend({rig.listen_pid})",
        "large_object_content": f"SELECT lo_put({rig.lo}, 0, 'x')",
        "accounts_rows": "UPDATE rt.accounts SET name = 'changed' WHERE id = 1",
    }
    for key, sql in cases.items():
        before = rig.snapshot()
        a.execute(sql)
        after = rig.snapshot()
        if key in ("conf_loaded", "secret_session", "stats_reset_db"):
            for _ in range(50):  # signals arrive asynchronously
                if after[key] != before[key]:
                    break
                after = rig.snapshot()
        assert any(p.startswith(key) for p in differences(before, after, counters=COUNTERS)), key
        rig.repair(before, after)
    with psycopg.connect(rig.conninfo(), autocommit=True) as other:
        other.execute(f"SELECT pg_notify('{rig.channel}', 'x')")
    assert rig.snapshot()["notifications"] > 0


def test_probes_find_secrets_and_dirty_sessions(rig):
    a = rig.admin
    for sql in ("SELECT rolpassword FROM pg_authid", f"SELECT query FROM pg_stat_activity WHERE pid = {rig.secret_pid}",
                "SELECT umoptions FROM pg_user_mappings", "SELECT subconninfo FROM pg_subscription",
                "SELECT * FROM pg_hba_file_rules", f"SELECT encode(pg_read_binary_file('{rig.files.file}'), 'hex')",
                f"SELECT md5(pg_read_file('{rig.files.file}'))", f"SELECT (pg_stat_file('{rig.files.file}')).size",
                f"SELECT pg_ls_dir('{rig.files.root}')",
                # outside the workspace: a view's, a function's and a comment's text; every session's query
                "SELECT definition FROM pg_views WHERE schemaname = 'rt_other'",
                f"SELECT pg_get_functiondef({rig.func_oid})", f"SELECT obj_description({rig.view_oid}, 'pg_class')",
                "SELECT pg_stat_get_backend_activity(b) FROM pg_stat_get_backend_idset() AS b"):
        assert rig.secrets.found_in(a.execute(sql).fetchall()), sql
    with pytest.raises(psycopg.errors.RaiseException) as raised:  # the schema's operator runs its function
        a.execute("SELECT 1 WHERE 1 OPERATOR(rt_other.=) ANY (SELECT 1)")
    assert rig.secrets.found_in(str(raised.value))
    assert not rig.secrets.found_in(a.execute("SELECT * FROM rt.accounts").fetchall())
    with psycopg.connect(rig.conninfo()) as dirty:
        dirty.execute("SET search_path = rt")
        baseline = rig.session_state(dirty)
        dirty.rollback()
        dirty.execute("SELECT setseed(0.5)")
        dirty.execute("SET work_mem = '1234kB'")
        dirty.execute("SELECT pg_advisory_lock(7)")
        dirty.execute("CREATE TEMP TABLE accounts AS SELECT 999 AS id")
        found = " ".join(rig.session_problems(rig.session_state(dirty), baseline))
    for word in ("random()", "settings", "advisory_locks", "temp_relations", "accounts_seen"):
        assert word in found, word


def test_least_privilege_role_really_is(rig):
    """The least-privilege runs mean something only if the role holds none of the powers the
    corpus goes after."""
    a = rig.admin
    (superuser, replication), = a.execute("SELECT rolsuper, rolreplication FROM pg_roles WHERE rolname = %s",
                                          (rig.lp_role,)).fetchall()
    assert not superuser and not replication
    for builtin in ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program", "pg_signal_backend",
                    "pg_read_all_settings", "pg_read_all_stats", "pg_monitor"):
        assert not a.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", (rig.lp_role, builtin)).fetchone()[0], builtin
    with psycopg.connect(rig.conninfo(rig.lp_role, rig.lp_password)) as lp:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            lp.execute("SELECT rolpassword FROM pg_authid")


@pytest.mark.parametrize("role", ROLES)
def test_a_reset_session_is_a_fresh_one(rig, sessions, role):
    """After the pool's reset, a session must be what a new login gets (the role's own limits
    and settings included), or whatever differs leaks from one request into the next."""
    session = sessions[role]
    assert rig.session_problems(session.baseline, session.fresh) == []
