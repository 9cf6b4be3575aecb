"""Red team, SQLite: every statement of ``redteam_corpus/sqlite.toml`` through the guarded path on
the real engine, and through the check alone in front of a plain writable connection; nothing
happens either way.

``guarded``: ``SQLConnection.query`` on the canary database (``mode=ro``, ``query_only``, the
read-only authorizer; pool of one, so the next request lands on the same connection).
``check_alone``: ``check_safety`` and, if it says safe, the statement on ``sqlite3.connect`` of a
writable copy (SQLite's "superuser"). In both, no file may appear or change (``ATTACH`` and
``VACUUM INTO`` create them), the database bytes must stay the same, nothing returned may hold a
secret, and the next request must find no temporary object, attached database, changed pragma
(``query_only``, ``writable_schema``, ``case_sensitive_like`` through ``LIKE``'s behaviour,
``reverse_unordered_selects``...) and the rows where they were.

Decisions: SQLite has no roles, hence the two modes. The "games" class holds statements that
must stay harmless reads (``printf``, ``random()``, reading ``sqlite_master``): they pass whether
refused or answered, and they show the probes do not flag ordinary reads.
"""

from __future__ import annotations

import pytest

from baton.specialists.sql.connection import SQLConnection
from redteam_embedded_rig import EmbeddedRig
from redteam_support import MIN_CASES, PooledSession, attempt, case_params, differences, load_corpus

CASES = load_corpus("sqlite")


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    rig = EmbeddedRig("sqlite", tmp_path_factory.mktemp("redteam_sqlite"))
    rig.start()
    yield rig
    rig.stop()


@pytest.fixture(scope="module")
def session(rig):
    conn = SQLConnection(rig.url, id="redteam-sqlite", pool_size=1, statement_timeout_s=10, connection_retries=0)
    made = PooledSession(rig, conn)
    yield made
    conn.close()


@pytest.mark.parametrize("case", case_params(CASES))
def test_guarded_query_leaves_no_trace(rig, session, case):
    attempt(rig, session, case, "sqlite", via_agent=False)


@pytest.mark.parametrize("case", case_params(CASES))
def test_check_alone_leaves_no_trace(rig, case):
    rig.attempt_check_alone(case)


@pytest.mark.parametrize("case", case_params(CASES, agent_only=True))
def test_agent_validate_and_run_leaves_no_trace(rig, session, case):
    attempt(rig, session, case, "sqlite", via_agent=True)


def test_corpus_is_large_and_covers_every_class():
    assert len(CASES) >= MIN_CASES
    classes = {c.cls for c in CASES}
    assert classes >= {"attach", "vacuum", "pragma", "extension", "file", "write", "transaction", "multi", "games",
                       "metadata", "memory"}
    for cls in classes:
        assert len({c.enc for c in CASES if c.cls == cls}) >= 2, cls


def test_probes_see_real_side_effects(rig):
    """On an unguarded copy, each side effect shows in the snapshots or the next request."""
    conn, path = rig.open_unguarded()
    try:
        baseline = rig.session_state(conn)
        before = rig.snapshot(path)
        conn.execute(f"VACUUM INTO '{rig.files.out('probe')}'")
        conn.execute("UPDATE accounts SET name = 'x' WHERE id = 1")
        found = " ".join(differences(before, rig.snapshot(path)))
        assert "files" in found and "database_bytes" in found
        statements = {
            "rows_seen": "DELETE FROM accounts WHERE id = 2",
            "temp_objects": "CREATE TEMP TABLE rt_t (a)",
            "databases": "ATTACH ':memory:' AS rt_mem",
            "query_only": "PRAGMA query_only = ON",
            "reverse_unordered_selects": "PRAGMA reverse_unordered_selects = 1",
            "like_ignores_case": "PRAGMA case_sensitive_like = 1",
        }
        for statement in statements.values():
            conn.execute(statement)
        found = " ".join(rig.session_problems(rig.session_state(conn), baseline))
        for word in statements:
            assert word in found, word
        assert rig.secrets.found_in(open(rig.files.file, "rb").read())
        assert not rig.secrets.found_in(conn.execute("SELECT * FROM accounts").fetchall())
        assert rig.secrets.found_in(conn.execute("SELECT file FROM pragma_database_list").fetchall())  # the path
    finally:
        rig.close_unguarded(conn, path)
        rig.files.sweep()


def test_a_reset_session_is_a_fresh_one(rig, session):
    """After a guarded request, the pooled connection is what a new connection is."""
    assert rig.session_problems(session.baseline, session.fresh) == []
