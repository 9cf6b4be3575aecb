"""``baton.yaml``: workspaces declared in a file, read into ``WorkspaceSpec``s, assembled by the
one builder; one server serving two of them keeps each key to its own workspace."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.cli.specs import project_specs, with_flags
from baton.errors import ConfigurationError, StartupRefusal
from baton.workspace.project import choose, load_project
from baton.workspace.spec import MCPServerSpec, WorkspaceSpec, mask_url

TWO = """
state: ${{TEST_STATE_URL:-}}
workspaces:
  sales:
    database:
      url: sqlite:///{sales}
      freshness: {{column: sales.day, max_age: 12h}}
    documents: docs
  stock:
    database: {{url: "sqlite:///{stock}"}}
    pipelines: "off"
"""


def shop(path: Path, table: str, rows: list[tuple[str, float]]) -> Path:
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE {table} (day TEXT, amount REAL)")
        db.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)
    return path


@pytest.fixture
def project(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text("# Revenue\n\nRevenue is the sum of sales amounts.\n")
    sales = shop(tmp_path / "sales.sqlite", "sales", [("2025-01-01", 10.0), ("2025-01-02", 32.5)])
    stock = shop(tmp_path / "stock.sqlite", "stock", [("2025-01-01", 7.0)])
    path = tmp_path / "baton.yaml"
    path.write_text(TWO.format(sales=sales, stock=stock))
    return path


def test_a_project_declares_several_workspaces_with_shared_defaults_and_paths_from_its_folder(project):
    specs = load_project(project, {})
    assert specs["sales"].state is None
    assert list(specs) == ["sales", "stock"]
    sales, stock = specs["sales"], specs["stock"]
    assert sales.documents is not None and sales.documents.folder == project.parent / "docs"
    assert sales.database is not None and sales.database.freshness is not None
    assert sales.database.freshness.column == "sales.day" and sales.database.freshness.max_age == "12h"
    assert stock.pipelines == "off" and sales.pipelines == "durable"
    assert choose(specs, "stock", project) is stock
    with pytest.raises(ConfigurationError, match="name one with --workspace"):
        choose(specs, None, project)
    with pytest.raises(ConfigurationError, match="no workspace 'nope'.*sales, stock"):
        choose(specs, "nope", project)
    assert WorkspaceSpec.from_json(sales.to_json()) == sales  # how serve --workers hands it over


def test_secrets_come_only_from_the_environment(tmp_path):
    path = tmp_path / "baton.yaml"
    path.write_text("workspaces:\n  w:\n    database: {url: 'postgresql://reader:${PG_SECRET}@db/sales'}\n")
    spec = load_project(path, {"PG_SECRET": "s3cr3t"})["w"]
    assert spec.database is not None and spec.database.url == "postgresql://reader:s3cr3t@db/sales"
    assert "s3cr3t" not in str(spec.masked()) and "***" in spec.masked()["database"]["url"]
    given = spec.model_copy(update={"events": "redis://:s3cr3t@cache:6379/0",
                                    "mcp": (MCPServerSpec(name="t", server="https://u:s3cr3t@mcp.example/mcp", allow=("x",)),)})
    assert "s3cr3t" not in str(given.masked())
    assert mask_url("not a url //u:s3cr3t@h") == "not a url //u:***@h"  # what does not parse is masked too
    with pytest.raises(ConfigurationError, match="PG_SECRET is not set"):
        load_project(path, {})
    for inline in ("postgresql://reader:hunter2@db/sales", "mysql+pymysql://u:p@h/d", "postgresql://u:${A}x@h/d",
                   "postgresql://u:${A:-hunter2}@h/d"):
        path.write_text(f"workspaces:\n  w:\n    database: {{url: '{inline}'}}\n")
        with pytest.raises(ConfigurationError, match="writes a password into the file") as refused:
            load_project(path, {"A": "a"})
        assert "hunter2" not in str(refused.value)
    path.write_text("state: postgresql://u:pw@h/d\nworkspaces:\n  w:\n    database: {url: 'sqlite:///x.db'}\n")
    with pytest.raises(ConfigurationError, match="state writes a password"):
        load_project(path, {})


@pytest.mark.parametrize(("text", "message"), [
    ("workspaces: {}\n", "at least one workspace"),
    ("- a list\n", "at least one workspace"),
    ("workspaces:\n  w: {database: {url: 'sqlite:///x.db'}, colour: red}\n", "colour: Extra inputs are not permitted"),
    ("workspaces:\n  w: {documents: docs}\n", "declares no database"),
    ("workspaces:\n  w: {database: {url: 'sqlite:///x.db'}, pipelines: sometimes}\n", "pipelines"),
    ("workspaces:\n  w: {database: {url: 'sqlite:///x.db'}, builtin_verified: [1]}\n", "cannot be given in a file"),
    ("workspaces:\n  'bad name/..': {database: {url: 'sqlite:///x.db'}}\n", "letters, digits"),
    ("workspaces:\n  w: {database: {url: 'sqlite:///x.db', freshness: {max_age: 1d}}}\n", "exactly one of sql and column"),
    ("workspaces:\n  w: {database: {url: 'sqlite:///x.db'}, mcp: [{name: t, server: 'x', allow: []}]}\n", "allowlist"),
    ("colour: red\nworkspaces:\n  w: {database: {url: 'sqlite:///x.db'}}\n", "unknown top-level field"),
    ("workspaces: [\n", "cannot be read as YAML"),
    ("workspaces:\n  w: {database: {url: 'sqlite:///x.db'}}\n  w: {database: {url: 'sqlite:///y.db'}}\n", "w written twice"),
])
def test_a_bad_project_file_is_one_error_naming_the_file_and_the_field(tmp_path, text, message):
    path = tmp_path / "baton.yaml"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=message) as refused:
        load_project(path, {})
    assert str(path) in str(refused.value)


def test_a_hostile_project_file_is_refused_at_once(tmp_path):
    """A YAML alias bomb, a file too large, a FIFO and a device: each one error, nothing read
    past the cap and nothing walked (each would stall or exhaust memory otherwise)."""
    import os

    bomb = tmp_path / "bomb.yaml"
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    bomb.write_text("workspaces:\n  w:\n    database: {url: 'sqlite:///x.db'}\n    extra:\n"
                    + "".join(f"      {line}\n" for line in levels))
    with pytest.raises(ConfigurationError, match="more than 100,000 values"):
        load_project(bomb, {})
    large = tmp_path / "large.yaml"
    large.write_text("workspaces:\n" + "#" * 1_100_000 + "\n")
    with pytest.raises(ConfigurationError, match="byte limit; not read"):
        load_project(large, {})
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(ConfigurationError, match="not a regular file"):
            load_project(path, {})


def test_flags_override_the_file(project, tmp_path):
    (spec,) = project_specs(project, "sales")
    other = tmp_path / "other"
    other.mkdir()
    flagged = with_flags(spec, docs=other, allow_functions=("audit.f",))
    assert flagged.documents is not None and flagged.documents.folder == other
    assert flagged.database is not None and flagged.database.allow_functions == ("audit.f",)
    assert flagged.database.freshness == spec.database.freshness  # what the flags leave alone stays the file's
    replaced = with_flags(spec, database="sqlite:///elsewhere.db")
    assert replaced.database is not None and replaced.database.url == "sqlite:///elsewhere.db" and replaced.name == "sales"
    assert with_flags(None).demo and not with_flags(None, database="sqlite:///x.db").demo
    with pytest.raises(StartupRefusal, match="--workspace needs --config"):
        project_specs(None, "sales")


async def test_one_server_serves_both_workspaces_and_each_key_reaches_only_its_own(project, tmp_path, monkeypatch):
    from baton.cli.serving import server_app
    from baton.state.location import State

    monkeypatch.delenv("BATON_API_KEYS", raising=False)
    specs = project_specs(project, None)
    app, printed = server_app(specs, None, State(tmp_path / "home"))
    keys = {name: key for key, name in printed}
    assert set(keys) == {"sales", "stock"} and app.state.workspaces.names() == {"sales", "stock"}
    sales, stock = ({"Authorization": f"Bearer {keys[n]}"} for n in ("sales", "stock"))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            asked = (await client.post("/v1/ask", json={"question": "What is revenue?"}, headers=sales)).json()
            session = asked["session_id"]
            assert (await client.get(f"/v1/sessions/{session}", headers=sales)).status_code == 200
            assert (await client.get("/v1/agents", headers=stock)).json()["workspace"] == "stock"
            assert (await client.get("/v1/sessions", headers=stock)).json() == {"sessions": []}
            leaks, checked = {}, set()
            for route in app.routes:  # every route with an id in its path, given the other workspace's session id
                path = getattr(route, "path", "")
                if "{" not in path or path.startswith("/static"):
                    continue
                for method in sorted(set(getattr(route, "methods", None) or ()) - {"HEAD"}):
                    concrete = re.sub(r"\{[^}]+\}", session, path)
                    response = await client.request(method, concrete, json={}, headers=stock)
                    checked.add(path)
                    if response.status_code not in (404, 422) or "revenue" in response.text.lower():
                        leaks[(method, path)] = (response.status_code, response.text[:80])
            assert leaks == {}
            assert {"/v1/sessions/{session_id}", "/v1/turns/{turn_id}/csv", "/v1/memory/{record_id}"} <= checked
            cont = await client.post("/v1/ask", json={"question": "more", "session_id": session}, headers=stock)
            assert cont.status_code == 404
    finally:
        await app.state.workspaces.aclose()


def test_baton_ask_and_agents_read_the_project_file(project, tmp_path):
    env = {"BATON_HOME": str(tmp_path / "home"), "TEST_STATE_URL": "", "COLUMNS": "200", "BATON_MODEL": ""}
    agents = CliRunner().invoke(build_app(), ["agents", "--config", str(project), "--workspace", "sales"], env=env)
    assert agents.exit_code == 0, agents.output
    assert "database" in agents.output and "documents" in agents.output
    several = CliRunner().invoke(build_app(), ["agents", "--config", str(project)], env=env)
    assert several.exit_code == 2 and "name one with --workspace" in several.output
    missing = CliRunner().invoke(build_app(), ["agents", "--config", str(tmp_path / "nope.yaml")], env=env)
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_init_writes_a_file_that_config_check_passes_and_holds_no_password(tmp_path):
    env = {"BATON_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    shop(tmp_path / "shop.sqlite", "sales", [("2025-01-01", 1.0)])
    out = tmp_path / "baton.yaml"
    made = CliRunner().invoke(build_app(), ["init", "--database", f"sqlite:///{tmp_path / 'shop.sqlite'}", "--name", "shop",
                                            "--out", str(out)], env=env)
    assert made.exit_code == 0, made.output
    checked = CliRunner().invoke(build_app(), ["config", "check", str(out)], env=env)
    assert checked.exit_code == 0, checked.output
    assert '"name": "shop"' in checked.output and "every check passed" in checked.output
    again = CliRunner().invoke(build_app(), ["init", "--database", "sqlite:///x.db", "--out", str(out)], env=env)
    assert again.exit_code == 2 and "exists" in again.output
    secret = tmp_path / "pg.yaml"
    CliRunner().invoke(build_app(), ["init", "--database", "postgresql://u:hunter2@db/d", "--out", str(secret)], env=env)
    assert "hunter2" not in secret.read_text() and "${DATABASE_PASSWORD}" in secret.read_text()
    masked = CliRunner().invoke(build_app(), ["config", "check", str(secret), "--offline"], env={**env, "DATABASE_PASSWORD": "hunter2"})
    assert masked.exit_code == 0, masked.output
    assert "hunter2" not in masked.output and "***" in masked.output


def test_config_check_names_every_problem(tmp_path):
    env = {"BATON_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    path = tmp_path / "baton.yaml"
    path.write_text("workspaces:\n  w:\n    database: {url: 'sqlite:///%s'}\n    documents: missing\n    semantic: nope.yaml\n"
                    "    model: 'nonsense'\n" % (tmp_path / "absent.sqlite"))
    checked = CliRunner().invoke(build_app(), ["config", "check", str(path)], env=env)
    assert checked.exit_code == 1
    for problem in ("documents:", "no such folder", "semantic:", "model:", "database: No database file"):
        assert problem in checked.output, checked.output


def test_config_check_refuses_a_privileged_role(tmp_path):
    import os

    url = os.environ.get("BATON_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("BATON_TEST_POSTGRES_URL is not set (a PostgreSQL server whose login is a superuser)")
    path = tmp_path / "baton.yaml"
    path.write_text("workspaces:\n  w:\n    database: {url: '${PG_URL}'}\n")
    checked = CliRunner().invoke(build_app(), ["config", "check", str(path)],
                                 env={"BATON_HOME": str(tmp_path / "home"), "COLUMNS": "200", "PG_URL": url})
    assert checked.exit_code == 1 and "database:" in checked.output and "superuser" in checked.output.lower(), checked.output


async def test_what_a_database_declares_reaches_its_connection(project, tmp_path):
    from baton.state.location import State
    from baton.workspace.assembly import assemble

    (spec,) = project_specs(project, "sales")
    database = spec.database.model_copy(update={"schemas": ("reporting",), "allow_functions": ("audit.f",)})
    ws = assemble(spec.model_copy(update={"database": database}), model=None, state=State(tmp_path / "home"))
    async with ws:
        (connection,) = ws.catalog.databases()
        assert connection.options.allowed_schemas == ("reporting",)
        assert connection.options.allow_functions == ("audit.f",)
        assert connection.options.freshness is not None
        assert {s["name"] for s in ws.catalog.listing()} == {"database", "documents"}
