"""The CLI's workspaces: a ``WorkspaceSpec`` from ``--config baton.yaml`` and the flags, and
the one way every command opens it (``open_spec``: the demo's parts filled in, then
``baton.workspace.assembly.assemble``).

Flags override the file: ``--database`` replaces the file's database, ``--docs``,
``--semantic``, ``--mcp`` and the others replace their fields. Without ``--config`` and
``--database`` a command works on the demo. The model is the spec's ``model``, else
``BATON_MODEL``; the state ``--state``, else the spec's, else ``BATON_STATE_URL``, else
SQLite files in ``BATON_HOME``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from baton.errors import ConfigurationError, StartupRefusal
from baton.workspace.spec import DatabaseSpec, DocumentsSpec, FreshnessSpec, MCPServerSpec, WorkspaceSpec

ConfigOption = typer.Option(None, "--config", help="A baton.yaml project file declaring the workspace(s) (flags override it).")
WorkspaceOption = typer.Option(None, "--workspace", help="Which workspace of --config (default: its only one; `serve`: all).")


def project_specs(config: Path | None, workspace: str | None) -> list[WorkspaceSpec]:
    """The workspaces of ``--config`` (one when ``--workspace`` names it); none without a file."""
    if config is None:
        if workspace is not None:
            raise StartupRefusal("--workspace needs --config", "give the baton.yaml that declares it")
        return []
    from baton.workspace.project import choose, load_project

    try:
        specs = load_project(config, os.environ)
        return [choose(specs, workspace, config)] if workspace is not None else list(specs.values())
    except ConfigurationError as exc:
        raise StartupRefusal(f"Configuration error: {exc}", "") from exc


def cli_spec(config: Path | None = None, workspace: str | None = None, **flags: Any) -> WorkspaceSpec:
    """The one workspace a command works on (``--config``/``--workspace`` and the flags)."""
    specs = project_specs(config, workspace)
    if len(specs) > 1:
        names = ", ".join(s.name for s in specs)
        raise StartupRefusal(f"{config} declares {len(specs)} workspaces ({names})", "name one with --workspace")
    return with_flags(specs[0] if specs else None, **flags)


def with_flags(spec: WorkspaceSpec | None, *, database: str | None = None, docs: Path | None = None,
               semantic: Path | None = None, mcp: Sequence[Any] = (), privileged: bool = False,
               allow_functions: Sequence[str] = (), freshness: FreshnessSpec | None = None,
               state: str | None = None) -> WorkspaceSpec:
    """``spec`` (the demo's when None and no ``--database``) with the flags given over it:
    ``--database`` replaces the database's URL (its other settings stay the file's), and each
    other flag replaces the field it names."""
    base = spec if spec is not None else (None if database else WorkspaceSpec(name="demo", demo=True))
    update: dict[str, Any] = {}
    own = base.database if base is not None and not base.demo else None
    if database or own is not None:
        database_update: dict[str, Any] = {}
        if privileged:
            database_update["allow_privileged_role"] = True
        if allow_functions:
            database_update["allow_functions"] = tuple(allow_functions)
        if freshness is not None:
            database_update["freshness"] = freshness
        if database:
            database_update["url"] = database
        current = own.model_dump() if own is not None else {}
        update["database"] = DatabaseSpec.model_validate({**current, **database_update})
        update["demo"] = False
    if docs is not None:
        update["documents"] = DocumentsSpec(folder=docs)
    if semantic is not None:
        update["semantic"] = semantic
    if mcp:
        update["mcp"] = tuple(MCPServerSpec(name=c.name, server=c.url or _command_line(c.command), allow=c.allowed_tools) for c in mcp)
    if state:
        update["state"] = state
    return WorkspaceSpec.model_validate({**(base.model_dump() if base is not None else {}), **update})


def _command_line(command: Sequence[str] | None) -> str:
    import shlex

    return shlex.join(command or ())


def spec_model(spec: WorkspaceSpec, fallback: Any) -> Any:
    """The model a command answers ``spec``'s questions with: the spec's own chain, else
    ``fallback`` (``BATON_MODEL``'s). Resolved once per workspace, by the command."""
    from baton.workspace.assembly import model_for

    return model_for(spec) if spec.model else fallback


def open_spec(spec: WorkspaceSpec, state: Any, model: Any, *, rebuild: bool = False, **parts: Any) -> Any:
    """The workspace ``spec`` declares, on ``state``, answering with ``model`` (``spec_model``'s):
    the demo's parts filled in first (``baton.demo.workspace.demo_spec``, in
    ``$BATON_HOME/demo``). ``parts``: ``assemble``'s (tracker, run_stages, host_options)."""
    from baton.workspace.assembly import assemble

    if spec.demo:
        from baton.demo.workspace import demo_spec

        given = spec.model_dump(exclude={"name", "demo", "directory", "semantic"}, exclude_defaults=True)
        spec = demo_spec(state.home / "demo", rebuild=rebuild, name=spec.name, semantic=spec.semantic, **given)
    return assemble(spec, model=model, state=state, **parts)


def specs_to_json(specs: Sequence[WorkspaceSpec]) -> str:
    """Specs as they travel to ``serve --workers N``'s workers (``specs_from_json``)."""
    import json

    return json.dumps([json.loads(s.to_json()) for s in specs])


def specs_from_json(text: str) -> list[WorkspaceSpec]:
    import json

    return [WorkspaceSpec.model_validate(item) for item in json.loads(text)]


__all__ = ["ConfigOption", "WorkspaceOption", "cli_spec", "open_spec", "project_specs", "spec_model", "specs_from_json",
           "specs_to_json", "with_flags"]
