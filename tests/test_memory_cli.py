"""`baton memory list | show | forget | rebuild | verify` on a real SQLite file."""

from __future__ import annotations

import sqlite3

from typer.testing import CliRunner

from baton.cli import build_app
from baton.memory import MemoryStore, Principal, Provenance, RecordDraft, TrustedAuthenticator


def seeded(tmp_path):
    db = tmp_path / "m.db"
    store = MemoryStore(f"sqlite:///{db}", authenticator=TrustedAuthenticator())
    scope = store.open(Principal("acme"))
    old = store.remember(scope, RecordDraft("learning", "timeout is 30s", entity="wh", attribute="timeout", value="30s",
                                            provenance=Provenance(session_id="s1"))).record
    new = store.remember(scope, RecordDraft("learning", "timeout is 60s", entity="wh", attribute="timeout", value="60s",
                                            provenance=Provenance(session_id="s2"))).record
    store.close()
    return f"sqlite:///{db}", db, old, new


def run(*args):
    result = CliRunner().invoke(build_app(), ["memory", *args], catch_exceptions=False, env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_cli_list_show_forget_rebuild_verify(tmp_path):
    url, db, old, new = seeded(tmp_path)
    code, out = run("list", "--db", url, "-w", "acme")
    assert code == 0 and "timeout is 60s" in out and "timeout is 30s" not in out
    code, out = run("list", "--db", url, "-w", "acme", "--all")
    assert "timeout is 30s" in out and "superseded" in out
    code, out = run("show", old.id[:12], "--db", url, "-w", "acme")
    assert code == 0 and "record.created" in out and "record.superseded" in out and f"superseded by {new.id}" in out
    code, out = run("verify", "--db", url)
    assert code == 0 and "acme: ok 3 events" in out
    code, out = run("forget", new.id, "--db", url, "-w", "acme", "--reason", "wrong", "--yes")
    assert code == 0 and "payload(s) erased" in out
    code, out = run("show", new.id, "--db", url, "-w", "acme")
    assert code == 0 and "forgotten" in out and "(erased)" in out
    code, out = run("rebuild", "--db", url)
    assert code == 0 and "acme: 4 events -> 1 records" in out and "matched" in out
    # a tampered projection is reported and repaired; a tampered journal fails verify
    con = sqlite3.connect(db)
    con.execute("UPDATE baton_mem_records SET confidence = 0.01")
    con.execute("DROP TRIGGER baton_mem_events_no_update")  # what an attacker with file access could do
    con.execute("UPDATE baton_mem_events SET type = 'record.applied' WHERE position = 1")
    con.commit()
    con.close()
    code, out = run("rebuild", "--db", url, "-w", "acme")
    assert "differed" in out
    code, out = run("verify", "--db", url)
    assert code == 1 and "BROKEN" in out and "event hash mismatch" in out


def test_cli_refuses_a_missing_database(tmp_path):
    code, out = run("list", "--db", f"sqlite:///{tmp_path / 'nope.db'}")
    assert code == 2 and not (tmp_path / "nope.db").exists()
