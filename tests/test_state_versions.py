"""Every family of the state is version-checked before a process starts: state a newer Baton
wrote (sessions, keys, login sessions, memory, DBOS's tables) is refused by serve, worker, mcp
and the CLI with one line naming both versions, exit 2; ``baton state migrate`` upgrades an
older state (SQLite files and PostgreSQL) and creates what is missing."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from baton.cli import build_app
from baton.state import keystore
from baton.state.location import State
from baton.state.migrations import Migration
from baton.state.versions import known_versions, read
from live_server import free_port

FAMILIES = ["sessions", "keys", "login_sessions", "memory", "pipelines"]
MODEL_ENV = {"BATON_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": "sk-test"}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path))
    for name in ("BATON_MODEL", "BATON_API_KEYS", "BATON_STATE_URL", "BATON_EVENTS_URL", "BATON_DEMO_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run(*args: str, **env: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200", **env})


def one_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def populate(state: State) -> None:
    """Every family, as a process of this Baton leaves it."""
    place = state.place_for("demo")
    place.sessions().close()
    place.memory().close()
    result = run("state", "migrate", *(["--state", state.url] if state.url else []))
    assert result.exit_code == 0, result.output


def set_version(state: State, family: str, version: int) -> None:
    """Rewrite one family's recorded version, as another Baton would have left it."""
    if family == "pipelines":
        statement, component = "UPDATE {schema}dbos_migrations SET version = :v", None
    else:
        statement, component = "UPDATE baton_schema_versions SET version = :v WHERE component = :c", family
    if state.url is None:
        path = {"sessions": state.home / "demo" / "sessions.sqlite", "memory": state.home / "demo" / "memory.sqlite",
                "pipelines": state.home / "pipelines.sqlite"}.get(family, state.home / "state.sqlite")
        with sqlite3.connect(path) as conn:
            conn.execute(statement.format(schema="").replace(":v", "?").replace(":c", "?"),
                         (version, component) if component else (version,))
        return
    engine = sa.create_engine(state.url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.execute(sa.text(statement.format(schema="dbos.")), {"v": version, "c": component})
    engine.dispose()


def known(state: State, family: str) -> int:
    return {r.family: r.known for r in read(state)}[family]


def commands(state: State) -> list[tuple[str, ...]]:
    at = ("--state", state.url) if state.url else ()
    return [("serve", "--port", str(free_port()), *at), ("worker", *at), ("sessions", *at), ("keys", "list", *at),
            ("state", "migrate", *at)]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_written_by_a_newer_baton_is_refused_by_every_process(home, family):
    state = State.from_env(home=home)
    populate(state)
    newer = known(state, family) + 1
    set_version(state, family, newer)
    for args in commands(state):
        line = one_line(run(*args, **MODEL_ENV))
        assert line.startswith("baton: ") and family in line, (args, line)
        assert f"schema version {newer}" in line and f"the {newer - 1} this Baton knows" in line, line
    mcp = run("mcp", **MODEL_ENV)
    assert mcp.exit_code == 2 and f"schema version {newer}" in mcp.output and "Traceback" not in mcp.output
    assert {r.family: r.found for r in read(state)}[family] == newer  # refused, left as it was


def test_every_family_newer_on_postgresql_is_refused(home, state_db):
    state = State.from_env(url=state_db, home=home)
    populate(state)
    assert {r.family for r in read(state)} == set(FAMILIES)
    for family in FAMILIES:
        newer = known(state, family) + 1
        set_version(state, family, newer)
        for args in commands(state):
            line = one_line(run(*args, **MODEL_ENV))
            assert family in line and f"schema version {newer}" in line, (args, line)
        set_version(state, family, newer - 1)
    assert run("sessions", "--state", state_db).exit_code == 0


def _next_keys_step(monkeypatch) -> int:
    """This Baton as the next version: the keys family gains a step (a table); its number."""
    version = max(m.version for m in keystore.MIGRATIONS) + 1
    step = Migration(version, "a table the next version adds",
                     lambda conn: conn.execute(sa.text("CREATE TABLE baton_next_step (id INTEGER PRIMARY KEY)")))
    monkeypatch.setattr(keystore, "MIGRATIONS", [*keystore.MIGRATIONS, step])
    return version


def _has_table(url: str, name: str) -> bool:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return sa.inspect(engine).has_table(name)
    finally:
        engine.dispose()


def test_state_migrate_upgrades_an_older_sqlite_state(home, monkeypatch):
    state = State.from_env(home=home)
    populate(state)
    version = _next_keys_step(monkeypatch)
    assert known_versions()["keys"] == version
    before = {(r.family, r.where): r.found for r in read(state)}
    assert before[("keys", "state.sqlite")] == version - 1
    result = run("state", "migrate")
    assert result.exit_code == 0, result.output
    assert f"keys (state.sqlite): {version - 1} -> {version}" in result.output
    rows = read(state)
    assert all(r.found == r.known for r in rows), rows
    assert _has_table(f"sqlite:///{home / 'state.sqlite'}", "baton_next_step")


def test_state_migrate_upgrades_an_older_postgresql_state(home, state_db, monkeypatch):
    state = State.from_env(url=state_db, home=home)
    populate(state)
    version = _next_keys_step(monkeypatch)
    result = run("state", "migrate", "--state", state_db)
    assert result.exit_code == 0, result.output
    assert f"keys (state database): {version - 1} -> {version}" in result.output
    assert all(r.found == r.known for r in read(state))
    assert _has_table(state_db, "baton_next_step")
    again = run("state", "migrate", "--state", state_db)
    assert again.exit_code == 0 and " -> " not in again.output


def test_state_migrate_creates_an_empty_postgresql_state_and_show_reads_it(home, state_db):
    state = State.from_env(url=state_db, home=home)
    assert {r.found for r in read(state)} == {0}
    result = run("state", "migrate", "--state", state_db)
    assert result.exit_code == 0, result.output
    assert all(r.found == r.known for r in read(state))
    shown = run("state", "show", "--state", state_db)
    assert shown.exit_code == 0 and "pipelines" in shown.output and "memory" in shown.output


def test_a_process_hosting_pipelines_refuses_newer_dbos_tables_without_the_cli(home):
    """The library path (an app built in Python) meets the same check where it opens the
    pipeline runtime."""
    from baton.state.migrations import StateSchemaError
    from baton.workspace.pipeline_host import PipelineHost

    state = State.from_env(home=home)
    populate(state)
    set_version(state, "pipelines", known(state, "pipelines") + 1)
    with pytest.raises(StateSchemaError, match="pipelines"):
        PipelineHost.for_state(state)
