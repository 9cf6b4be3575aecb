"""``baton mcp``: the workspace as an MCP server over stdio, for a desktop assistant or an IDE.

The client starts ``baton mcp`` and talks to it over stdin/stdout; it serves the demo (with
no model it answers the demo's verified questions) or the workspace over ``--database``
(and ``--docs``), on the same state as ``baton serve``; ``--mcp``/``--mcp-allow`` add MCP
servers as specialists, as on ``baton serve``. Standard output belongs to the
protocol: everything this command says goes to stderr, and nothing is printed before
serving starts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from baton.cli.mcp_specialists import McpAllowOption, McpOption, err, mcp_specialists
from baton.cli.specs import ConfigOption, WorkspaceOption, cli_spec, spec_model


class _StdoutToStderr:
    """While the workspace opens, file descriptor 1 points at stderr: whatever a library or a
    child process prints (a pipeline engine starting, say) must not reach the client as
    protocol. ``restore()`` hands the real stdout back just before serving (where the SDK
    diverts it again for the same reason)."""

    def __enter__(self) -> _StdoutToStderr:
        import os
        import sys

        sys.stdout.flush()
        self._saved: int | None = os.dup(1)
        os.dup2(2, 1)
        return self

    def restore(self) -> None:
        import os
        import sys

        if self._saved is not None:
            sys.stdout.flush()
            os.dup2(self._saved, 1)
            os.close(self._saved)
            self._saved = None

    def __exit__(self, *exc: object) -> None:
        self.restore()


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp_command(
        database: str | None = typer.Option(None, help="Serve the workspace over this database URL (needs a model); default: the demo."),
        docs: Path | None = typer.Option(None, help="With --database: a folder of documents to answer from."),
        state: str | None = typer.Option(None, "--state", help="Database URL of the shared state (default: $BATON_STATE_URL, else SQLite files in $BATON_HOME)."),
        log_level: str = typer.Option("warning", help="debug, info, warning or error (logs go to stderr)."),
        mcp: list[str] = McpOption,
        mcp_allow: list[str] = McpAllowOption,
        unsafe_allow_privileged_role: bool = typer.Option(
            False, "--unsafe-allow-privileged-role",
            help="Run model-written SQL even if the --database role can read server files, run programs or read secrets."),
        config: Path | None = ConfigOption,
        workspace: str | None = WorkspaceOption,
    ) -> None:
        """Serve a workspace as an MCP server over stdio (tools: ask, list_specialists,
        check_sql, search_memory, list_verified_questions; resources: schema, verified questions)."""
        from baton.cli.db import unsafe_privileged_role_opt_in
        from baton.cli.serving import configure_logging, local_workspace
        from baton.errors import ConfigurationError
        from baton.llm import model_from_env
        from baton.mcp import serve_stdio
        from baton.state.location import State

        configure_logging(log_level)
        servers = mcp_specialists(mcp, mcp_allow)
        privileged = unsafe_privileged_role_opt_in(unsafe_allow_privileged_role)
        if database:  # one line and exit 2 for a URL that cannot be used, as ask and serve
            from baton.cli.database_check import refuse_unusable_database

            refuse_unusable_database(database, allow_privileged_role=privileged)
        spec = cli_spec(config, workspace, database=database, docs=docs, mcp=servers, privileged=privileged, state=state)
        try:
            model = spec_model(spec, model_from_env())
            where = State.from_env(url=spec.state).check_versions()
        except ConfigurationError as exc:
            err.print(f"[red]Configuration error:[/red] {exc}")
            raise typer.Exit(2) from exc

        async def run() -> None:
            with _StdoutToStderr() as stdout:
                async with local_workspace(spec, model, where, quiet=True) as ws:
                    if ws.no_model:
                        err.print("No model configured (BATON_MODEL unset): verified questions are answered without an LLM.")
                    stdout.restore()
                    await serve_stdio(ws)

        asyncio.run(run())
