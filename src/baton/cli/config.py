"""``baton init`` writes a commented ``baton.yaml`` for a database; ``baton config check``
validates one: every database reachable with a least-privilege role (the same check ``serve``
makes), every folder and file present, every semantic model readable, the state usable, and
prints the resolved specs with passwords masked. Exit 0 when all is well, 1 when a check
failed (each problem on its own line), 2 when the file itself cannot be read.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

app = typer.Typer(no_args_is_help=True)
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

TEMPLATE = """\
# baton.yaml: the workspaces Baton serves (`baton serve --config baton.yaml`).
# Secrets never go in this file: write ${{NAME}} and set the environment variable NAME.
# Check it with `baton config check`.

# Shared by every workspace below (each may set its own):
# state: ${{BATON_STATE_URL:-}}     # PostgreSQL for replicas and workers; unset: SQLite files in $BATON_HOME
# model: openai:gpt-4o-mini          # unset: BATON_MODEL; none at all: verified questions answered without a model

workspaces:
  {name}:
    database:
      url: {url}
      # allow_functions: [audit.safe_lookup]      # SECURITY DEFINER routines model SQL may call
      # freshness: {{column: etl_runs.loaded_at, max_age: 1d}}
    # documents: docs/                # Markdown, text or PDF: answered with citations, and used as doctrine
    # semantic: models/               # a Baton semantic YAML or a dbt MetricFlow project
    # mcp:
    #   - {{name: tickets, server: "tickets-mcp --stdio", allow: [search_tickets]}}
    # pipelines: durable              # off | local | durable (multi-step questions, with a model)
"""


def _template_url(url: str) -> str:
    """``url`` with its password replaced by a ``${NAME}`` reference (the file holds no secret)."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*):([^@/\s]+)@(.*)$", url)
    if match is None:
        return json.dumps(url)
    return json.dumps(f"{match.group(1)}:${{DATABASE_PASSWORD}}@{match.group(3)}")


@app.command("init")
def init(
    database: str = typer.Option(..., "--database", help="The database URL the workspace answers over."),
    name: str = typer.Option("database", help="The workspace's name."),
    out: Path = typer.Option(Path("baton.yaml"), "--out", help="Where to write it."),
    force: bool = typer.Option(False, help="Overwrite an existing file."),
) -> None:
    """Write a commented baton.yaml declaring one workspace over --database."""
    from baton.workspace.spec import WorkspaceSpec

    WorkspaceSpec.model_validate({"name": name, "database": {"url": database}})  # a bad name: a refusal, not a file
    if out.exists() and not force:
        err.print(f"[red]error:[/red] {escape(str(out))} exists (--force to overwrite)")
        raise typer.Exit(2)
    url = _template_url(database)
    out.write_text(TEMPLATE.format(name=name, url=url), encoding="utf-8")
    console.print(f"Wrote {escape(str(out))}.")
    if "${DATABASE_PASSWORD}" in url:
        console.print("The password is not in the file: set DATABASE_PASSWORD before `baton serve --config`.")


@app.command("check")
def check(
    config: Path = typer.Argument(Path("baton.yaml"), help="The project file."),
    workspace: str | None = typer.Option(None, "--workspace", help="Check this workspace only."),
    offline: bool = typer.Option(False, help="Check the file and its paths only: connect to nothing."),
) -> None:
    """Validate baton.yaml and print the resolved workspaces (passwords masked)."""
    from baton.cli.specs import project_specs

    specs = project_specs(config, workspace)  # an unreadable file: one line, exit 2 (baton.cli.refusals)
    problems: list[str] = []
    for spec in specs:
        problems += [f"{spec.name}: {p}" for p in _problems(spec, offline)]
    console.print_json(json.dumps({"workspaces": [spec.masked() for spec in specs]}))
    for problem in problems:
        err.print(f"[red]problem:[/red] {escape(problem)}")
    if problems:
        raise typer.Exit(1)
    console.print(f"[green]{escape(str(config))}: {len(specs)} workspace(s), every check passed[/green]")


def _problems(spec: Any, offline: bool) -> list[str]:
    """What would stop ``spec``'s workspace from starting, each in one line."""
    problems: list[str] = []
    if spec.documents is not None and not Path(spec.documents.folder).is_dir():
        problems.append(f"documents: {spec.documents.folder}: no such folder")
    if spec.semantic is not None:
        problems += _semantic_problem(spec.semantic)
    if spec.model:
        from baton.errors import ConfigurationError
        from baton.workspace.assembly import model_for

        try:
            model_for(spec)
        except ConfigurationError as exc:
            problems.append(f"model: {exc}")
    if spec.database is not None and spec.database.freshness is not None:
        from baton.errors import ConfigurationError
        from baton.workspace.assembly import freshness_of

        try:
            freshness_of(spec.database)
        except (ConfigurationError, ValueError) as exc:
            problems.append(f"database.freshness: {exc}")
    if offline:
        return problems
    if spec.database is not None and not spec.demo:
        import asyncio

        from baton.cli.database_check import check_database

        problem, _ = asyncio.run(check_database(spec.database.url, allow_privileged_role=spec.database.allow_privileged_role))
        if problem is not None:
            problems.append(f"database: {problem}")
    problems += _state_problem(spec.state or os.environ.get("BATON_STATE_URL") or None)
    return problems


def _semantic_problem(path: Path) -> list[str]:
    from baton.semantic.errors import SemanticModelError
    from baton.semantic.loading import load_model

    try:
        load_model(path)
    except SemanticModelError as exc:
        return [f"semantic: {path}: {exc}"]
    return []


def _state_problem(url: str | None) -> list[str]:
    if url is None:
        return []
    from baton.errors import ConfigurationError, StartupRefusal
    from baton.state.location import State

    try:
        State.from_env(url=url).check_versions()
    except (ConfigurationError, StartupRefusal) as exc:
        return [f"state: {exc}"]
    return []


__all__ = ["app"]
