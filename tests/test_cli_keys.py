"""`baton keys create|list|revoke` (issue 12: keys kept in the state store so every replica
accepts the same ones): a key made by the CLI opens a running server on the same state at
its next request and stops at the next request after it is revoked (the server asks the
store on every request: no cache, no restart); the key is printed once and stored as a
digest; hostile workspace names, labels and key ids are refused with one line and exit 2,
and a key id is matched literally (``%`` / ``_`` are no LIKE wildcards). Each test runs on
the embedded SQLite state and on a fresh PostgreSQL state database (skipped without
``BATON_TEST_POSTGRES_URL``)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from baton.agents import OrchestratorAgent
from baton.cli import build_app
from baton.server import SessionStore, Workspace, Workspaces, create_app
from baton.state.keys import digest
from baton.state.keystore import KEYS, KeyStore
from baton.state.location import State


@dataclass
class Where:
    state: State
    args: list[str]  # the --state option the CLI gets ([] on the embedded state)

    def store(self) -> KeyStore:
        return self.state.keys()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def where(request, tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_STATE_URL", raising=False)
    monkeypatch.delenv("BATON_API_KEYS", raising=False)
    if request.param == "sqlite":
        yield Where(State.from_env(), [])
        return
    from pg_fresh import fresh_database

    with fresh_database(request.getfixturevalue("postgres_url"), "baton_keys") as url:
        yield Where(State.from_env(url=url), ["--state", url])


def run(where: Where, *args: str):
    return CliRunner().invoke(build_app(), ["keys", *args, *where.args], env={"COLUMNS": "200"})


def live_digests(where: Where) -> list[str]:
    store = where.store()
    try:
        with store.engine.connect() as conn:
            return sorted(conn.execute(sa.select(KEYS.c.digest).where(KEYS.c.revoked_at.is_(None))).scalars())
    finally:
        store.close()


def app_on(state: State, name: str = "database"):
    """The app `baton serve` builds, keys included (``serving.api_keys``), over a workspace
    with no model: authentication is what is tested."""
    from baton.cli.serving import api_keys

    workspaces = Workspaces([Workspace(name, OrchestratorAgent(f"{name}-o"), SessionStore())])
    keys, _printed = api_keys(workspaces, state)
    return create_app(workspaces, keys)


def client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test:8765")


async def test_a_key_made_by_the_cli_opens_a_running_server_and_revoking_it_closes_it(where):
    app = app_on(where.state)  # started before the key exists
    made = run(where, "create", "--workspace", "database", "--label", "ci runner")
    assert made.exit_code == 0, made.output
    key = made.stdout.strip()
    assert key.startswith("bt_") and "\n" not in key  # stdout is the key alone: KEY=$(baton keys create ...)
    assert digest(key)[:12] in made.stderr and key not in made.stderr
    async with client(app) as c:
        bearer = {"Authorization": f"Bearer {key}"}
        assert (await c.get("/v1/agents", headers=bearer)).status_code == 200  # no restart needed
        await c.post("/login", json={"key": key})
        assert (await c.get("/v1/agents")).status_code == 200  # the page's session, made from the key

        listed = run(where, "list", "--json")
        assert listed.exit_code == 0 and key not in listed.stdout
        (row,) = [r for r in json.loads(listed.stdout) if r["label"] == "ci runner"]
        assert row["id"] == digest(key)[:12] and row["workspace"] == "database" and row["revoked_at"] is None
        table = run(where, "list", "--workspace", "database")
        assert table.exit_code == 0 and row["id"] in table.stdout and "ci runner" in table.stdout and key not in table.stdout

        revoked = run(where, "revoke", row["id"], "--workspace", "database")
        assert revoked.exit_code == 0, revoked.output
        assert "Revoked 1 key" in revoked.stdout
        assert (await c.get("/v1/agents", headers=bearer)).status_code == 401  # the very next request
        assert (await c.get("/v1/agents")).status_code == 401  # and the session made from it
        again = run(where, "revoke", row["id"], "--workspace", "database")
        assert again.exit_code == 1 and "Revoked 0 keys" in again.stderr
    (after,) = [r for r in json.loads(run(where, "list", "--json").stdout) if r["label"] == "ci runner"]
    assert after["revoked_at"] is not None


def test_only_the_digest_is_stored(where):
    key = run(where, "create", "-w", "database").stdout.strip()
    store = where.store()
    try:
        with store.engine.connect() as conn:
            rows = [tuple(r) for r in conn.execute(sa.select(KEYS))]
    finally:
        store.close()
    assert len(rows) == 1 and digest(key) in rows[0] and not any(key in str(value) for value in rows[0])


def test_a_key_opens_only_its_own_workspace_even_with_a_path_like_name(where):
    made = run(where, "create", "-w", "database/../demo")  # a valid name, stored verbatim: never a path
    assert made.exit_code == 0, made.output
    key = made.stdout.strip()
    store = where.store()
    try:
        assert store.workspace_of(digest(key)) == "database/../demo"
    finally:
        store.close()
    other = run(where, "create", "-w", "demo").stdout.strip()
    assert run(where, "revoke", digest(other)[:12], "-w", "database").exit_code == 1  # another workspace's key: untouched
    assert digest(other) in live_digests(where)


async def test_the_server_refuses_a_key_of_a_workspace_it_does_not_serve(where):
    key = run(where, "create", "-w", "database/../demo").stdout.strip()
    async with client(app_on(where.state, "demo")) as c:
        assert (await c.get("/v1/agents", headers={"Authorization": f"Bearer {key}"})).status_code == 401


@pytest.mark.parametrize("name", ["", "../demo", "/etc", "a\\b", "demo\n", "de\x00mo", "demo\x1b[2J", "de mo", "dem\u202eo",
                                  "x" * 201, "x" * 100_000, "%", "' OR 1=1 --"])
def test_hostile_workspace_names_are_refused_with_one_line(where, name):
    for args in (["create", "-w", name], ["list", "-w", name], ["revoke", "0123456789ab", "-w", name]):
        result = run(where, *args)
        assert result.exit_code == 2, (args, result.output)
        assert "invalid workspace name" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert len(result.stderr) < 400  # a huge name is cut, not echoed
    assert live_digests(where) == []


@pytest.mark.parametrize("label", ["a\nb", "a\rb", "\x1b[31mred", "nul\x00", "tab\there", "\u202eevil", "x" * 201])
def test_labels_with_control_characters_are_refused(where, label):
    result = run(where, "create", "-w", "database", "--label", label)
    assert result.exit_code == 2 and "label" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == "" and live_digests(where) == []


@pytest.mark.parametrize("key_id", ["%", "%%%%%%%%", "________", "_", "' OR 1=1 --", "0' OR '1'='1", "abc", "abcdef0",
                                    "c%", "g" * 12, "a" * 65, "*", ""])
def test_malformed_key_ids_revoke_nothing(where, key_id):
    keys = [run(where, "create", "-w", "database").stdout.strip() for _ in range(3)]
    before = live_digests(where)
    assert sorted(digest(k) for k in keys) == before
    result = run(where, "revoke", key_id, "-w", "database")
    assert result.exit_code == 2, result.output
    assert "key id" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert live_digests(where) == before


def test_the_store_matches_a_prefix_literally(where):
    """The same guarantee without the CLI's check: ``KeyStore.revoke`` escapes LIKE wildcards."""
    store = where.store()
    try:
        for _ in range(3):
            store.create("database")
        for prefix in ("%", "_", "________", "%' OR '1'='1", "\\", "/%"):
            assert store.revoke(prefix, "database") == 0 and store.live(prefix, "database") == []
        assert len(store.live("", "database")) == 3
    finally:
        store.close()


def test_an_ambiguous_id_is_refused_and_a_longer_one_revokes_exactly_one(where):
    twins = ["abcdef01" + "0" * 56, "abcdef01" + "1" * 56]
    store = where.store()
    try:
        with store.engine.connect() as conn, conn.begin():
            for i, d in enumerate(twins):
                conn.execute(KEYS.insert().values(digest=d, workspace="database", label=f"twin {i}", created_at="2026-01-01T00:00:00+00:00"))
    finally:
        store.close()
    ambiguous = run(where, "revoke", "ABCDEF01", "-w", "database")  # case does not matter: digests are lowercase hex
    assert ambiguous.exit_code == 2 and "names 2 live keys" in ambiguous.stderr
    assert live_digests(where) == twins
    one = run(where, "revoke", "abcdef011", "-w", "database")
    assert one.exit_code == 0 and "Revoked 1 key" in one.stdout and "twin 1" in one.stdout
    assert live_digests(where) == twins[:1]
    assert run(where, "revoke", "abcdef01", "-w", "database").exit_code == 0  # now it names one live key


def test_revoking_the_default_key_is_allowed_and_the_next_start_makes_another(where):
    store = where.store()
    try:
        default = store.default_key("database")
    finally:
        store.close()
    listed = run(where, "list")
    assert "(default)" in listed.stdout and default not in listed.stdout
    result = run(where, "revoke", digest(default)[:12], "-w", "database")
    assert result.exit_code == 0 and "Revoked 1 key" in result.stdout and "default key" in result.stderr
    store = where.store()
    try:
        assert store.workspace_of(digest(default)) is None
        assert store.default_key("database") != default  # what the next `baton serve` prints
    finally:
        store.close()


def test_listing_and_revoking_make_no_files_on_an_empty_home(where, tmp_path):
    if where.args:
        pytest.skip("the embedded state only")
    assert run(where, "list").exit_code == 0 and json.loads(run(where, "list", "--json").stdout) == []
    assert run(where, "revoke", "0123456789ab", "-w", "database").exit_code == 1
    assert not (tmp_path / "home").exists()


def test_a_state_url_that_is_not_postgresql_is_one_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path))
    result = CliRunner().invoke(build_app(), ["keys", "list", "--state", f"sqlite:///{tmp_path}/x.sqlite"])
    assert result.exit_code == 2 and "PostgreSQL URL" in result.stderr and len(result.stderr.strip().splitlines()) == 1
