"""Red team, DuckDB: every statement of ``redteam_corpus/duckdb.toml`` through the guarded path on
the real engine, and through the check alone in front of a fully privileged connection; nothing
happens either way.

``guarded``: ``SQLConnection.query`` on the canary database (pool of one, so the next request
lands on the same DuckDB connection). ``check_alone``: ``check_safety`` and, if it says safe, the
statement on a writable copy of the database with external access on and an HTTP secret defined
(DuckDB's equivalent of running as a superuser). In both, no file may appear or change, the
database bytes must stay the same, nothing returned may hold a secret (file contents and names,
the secret's scope, an environment variable), and the next request on the same connection must
find no temporary table, variable, macro, prepared statement, attached database, loaded
extension, changed setting, registered resource type, or seeded ``random()``.

Decisions: DuckDB has no roles, hence the two modes above instead of two roles. The Python build
has no ``getenv``; those cases stay (a build with it must still refuse them).
"""

from __future__ import annotations

import asyncio

import pytest

from baton.specialists.sql.connection import SQLConnection
from redteam_embedded_rig import EmbeddedRig
from redteam_support import MIN_CASES, PooledSession, attempt, case_params, differences, load_corpus

CASES = load_corpus("duckdb")


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    rig = EmbeddedRig("duckdb", tmp_path_factory.mktemp("redteam_duckdb"))
    rig.start()
    yield rig
    rig.stop()


@pytest.fixture(scope="module")
def session(rig):
    conn = SQLConnection(rig.url, id="redteam-duckdb", pool_size=1, statement_timeout_s=10, connection_retries=0)
    made = PooledSession(rig, conn)
    yield made
    conn.close()


@pytest.mark.parametrize("case", case_params(CASES))
def test_guarded_query_leaves_no_trace(rig, session, case):
    attempt(rig, session, case, "duckdb", via_agent=False)


@pytest.mark.parametrize("case", case_params(CASES))
def test_check_alone_leaves_no_trace(rig, case):
    rig.attempt_check_alone(case)


@pytest.mark.parametrize("case", case_params(CASES, agent_only=True))
def test_agent_validate_and_run_leaves_no_trace(rig, session, case):
    attempt(rig, session, case, "duckdb", via_agent=True)


def test_corpus_is_large_and_covers_every_class():
    assert len(CASES) >= MIN_CASES
    classes = {c.cls for c in CASES}
    assert classes >= {"file_read", "file_write", "session", "seed", "resource", "secret", "write", "multi",
                       "metadata", "memory"}
    for cls in classes:
        assert len({c.enc for c in CASES if c.cls == cls}) >= 2, cls


def test_probes_see_real_side_effects(rig):
    """On an unguarded copy, each side effect shows in the snapshots or the next request."""
    conn, path = rig.open_unguarded()
    try:
        baseline = rig.session_state(conn)
        before = rig.snapshot(path)
        conn.execute(f"COPY accounts TO '{rig.files.out('probe')}'")
        assert "files" in " ".join(differences(before, rig.snapshot(path)))
        statements = {
            "temp_tables": "CREATE TEMP TABLE rt_t (a INT)",
            "variables": "SET VARIABLE rt_v = 1",
            "user_functions": "CREATE TEMP MACRO rt_m(a) AS a",
            "prepared": "PREPARE rt_p AS SELECT 1",
            "databases": "ATTACH ':memory:' AS rt_mem",
            "resource_types": "SELECT * FROM register_external_resource_type('rt_type', kind := 'table', create_function := 'abs')",
            "settings": "SET threads = 1",
            "rows_seen": "UPDATE accounts SET name = 'x' WHERE id = 1",
            "random()": "SELECT setseed(0.5)",
        }
        for statement in statements.values():
            conn.execute(statement)
        found = " ".join(rig.session_problems(rig.session_state(conn), baseline))
        for word in statements:
            assert word in found, word
        for sql in (f"SELECT content FROM read_text('{rig.files.file}')", f"SELECT file FROM glob('{rig.files.root}/*')",
                    "SELECT scope FROM duckdb_secrets()",
                    # what lies outside the workspace, and where the database is: each holds a needle
                    "SELECT stats FROM pragma_storage_info('other.vault')", "SELECT sql FROM duckdb_tables()",
                    "SELECT sql FROM duckdb_views() WHERE schema_name = 'other'", "SELECT path FROM duckdb_databases()",
                    "SELECT macro_definition FROM duckdb_functions() WHERE schema_name = 'other'"):
            assert rig.secrets.found_in(conn.execute(sql).fetchall()), sql
    finally:
        rig.close_unguarded(conn, path)
        rig.files.sweep()


def test_the_guarded_connection_spills_where_a_needle_shows(rig, session):
    """``current_setting('temp_directory')`` would show Baton's spill folder: the needle is real."""
    result = asyncio.run(session.conn.execute_readonly("SELECT current_setting('temp_directory')"))
    assert rig.secrets.found_in(result.rows)


def test_a_reset_session_is_a_fresh_one(rig, session):
    """After a guarded request, the pooled connection is what a new connection is."""
    assert rig.session_problems(session.baseline, session.fresh) == []
