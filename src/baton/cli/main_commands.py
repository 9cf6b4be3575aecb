"""Top-level commands: ``demo``, ``ask``, ``serve``, ``agents``."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from baton.cli.db import AllowFunctionOption, allowed_functions
from baton.cli.mcp_specialists import McpAllowOption, McpOption, mcp_specialists
from baton.cli.render import check_chart_path, print_answer, write_chart
from baton.cli.specs import ConfigOption, WorkspaceOption, cli_spec, spec_model

console = Console()
notes = Console(stderr=True)  # progress and notices: stdout stays the answer (`ask --json` pipes into a parser)


def baton_home() -> Path:
    from baton.state.location import baton_home as home

    return home()


def _model():
    from baton.errors import ConfigurationError, StartupRefusal
    from baton.llm import model_from_env

    try:
        return model_from_env()
    except ConfigurationError as exc:  # one line and exit 2 at the CLI's edge (baton.cli.refusals)
        raise StartupRefusal(f"Model configuration error: {exc}", "") from exc


def _state(url: str | None):
    """The state: ``--state``, else ``BATON_STATE_URL``, else SQLite files in ``BATON_HOME``. A URL
    that cannot be used is a ``ConfigurationError``, a state that a newer Baton wrote a
    ``StateSchemaError``, a ``BATON_HOME`` that cannot be a folder a ``StartupRefusal``: one line
    and exit 2 at the CLI's edge."""
    from baton.errors import StartupRefusal
    from baton.state.location import State

    where = State.from_env(url=url)
    try:  # the folder every command here writes to (created as they would): not a traceback at its first file
        where.home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = "a file, not a folder" if where.home.is_file() else exc.strerror or str(exc)
        raise StartupRefusal(f"BATON_HOME {where.home}: cannot be Baton's folder ({why})",
                             "set BATON_HOME to a folder this user may write") from None
    return where.check_versions()


StateOption = typer.Option(None, "--state", help="Database URL of the shared state (default: $BATON_STATE_URL, else SQLite files in $BATON_HOME).")
SemanticOption = typer.Option(None, "--semantic", help="A semantic model of the database (Baton YAML, or a dbt MetricFlow project: "
                              "its directory, a YAML file or a semantic_manifest.json): "
                              "metric questions answered from it, with no model (default for the demo: its own).")


FreshnessSQLOption = typer.Option(None, "--freshness-sql", help="With --database: a read-only query returning when the data "
                                  "was last loaded (e.g. \"SELECT max(loaded_at) FROM etl_runs\"); answers on data older "
                                  "than --max-data-age say so.")
FreshnessColumnOption = typer.Option(None, "--freshness-column", help="With --database: TABLE.COLUMN holding load times "
                                     "(the same as --freshness-sql \"SELECT max(COLUMN) FROM TABLE\").")
MaxDataAgeOption = typer.Option(None, "--max-data-age", help="How old the data may be before answers warn: 90s, 30m, 12h, "
                                "1d, 2w, 1d12h (default 1d; with --freshness-sql or --freshness-column).")


def _freshness(database: str | None, sql: str | None, column: str | None, max_age: str | None):
    """The ``--freshness-*`` options as a ``FreshnessSpec``, its query checked against the
    database now (one line and exit 2 for anything unusable); None when none was given."""
    from baton.errors import ConfigurationError
    from baton.specialists.sql.connection import SQLConnection
    from baton.workspace.assembly import freshness_of
    from baton.workspace.spec import DatabaseSpec, FreshnessSpec

    if sql is None and column is None:
        if max_age is not None:
            console.print("[red]Freshness error:[/red] --max-data-age needs --freshness-sql or --freshness-column")
            raise typer.Exit(2)
        return None
    try:
        if not database:
            raise ConfigurationError("--freshness-sql and --freshness-column need --database")
        if sql is not None and column is not None:
            raise ConfigurationError("give --freshness-sql or --freshness-column, not both")
        if column is not None and not column.rpartition(".")[0]:
            raise ConfigurationError(f"--freshness-column {column!r} is not TABLE.COLUMN")
        given = FreshnessSpec(sql=sql, column=column, max_age=max_age or "1d")
        SQLConnection(database, freshness=freshness_of(DatabaseSpec(url=database, freshness=given)))  # the safety check, no connection opened
    except ConfigurationError as exc:
        console.print(f"[red]Freshness error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    return given


def _demo_workspace(rebuild: bool = False, state=None):
    """The demo workspace under ``$BATON_HOME/demo`` (built on first use), on ``state``
    (default: ``BATON_STATE_URL``, else files beside the database)."""
    from baton.cli.serving import open_workspace
    from baton.cli.specs import with_flags

    return open_workspace(with_flags(None), _model(), state or _state(None), rebuild=rebuild)


def _report_running_demo(running, rebuild: bool, where) -> int:
    """What a second ``baton demo`` says about the running one (``baton.demo.service``); its exit code."""
    pid = f" (pid {running.pid})" if running.pid else ""
    if rebuild:
        console.print(f"[red]A demo is running[/red] at {running.url or where.home}{pid}. Stop it before --rebuild: "
                      "rebuilding deletes the database and conversations it is using.")
        return 1
    if running.key_digest is None:
        console.print(f"A demo is starting at {running.url}{pid}: it prints its link when it is ready.")
        return 0
    key = os.environ.get("BATON_DEMO_KEY") or _default_demo_key(where)
    link = running.link(key)
    if link is None:
        console.print(f"A demo is already running at {running.url}{pid} with another key (BATON_DEMO_KEY): "
                      "open the link it printed.")
        return 0
    console.print(f"\n[bold green]Baton demo[/bold green] is already running{pid}. Open:\n\n  [link={link}]{link}[/link]\n")
    return 0


def _default_demo_key(where) -> str:
    store = where.keys()
    try:
        return store.default_key("demo")
    finally:
        store.close()


def _semantic_file(path: Path | None) -> Path | None:
    """``--semantic FILE``, read and checked now: one line and exit 2 for a model that cannot be used."""
    if path is None:
        return None
    from baton.errors import StartupRefusal
    from baton.semantic.errors import SemanticModelError
    from baton.semantic.loading import load_model

    try:
        load_model(path)
    except SemanticModelError as exc:  # one line and exit 2 at the CLI's edge (baton.cli.refusals)
        raise StartupRefusal(f"Semantic model error: {path}: {exc}", "") from exc
    return path


def app_from_config():
    """The app of one ``baton serve --workers N`` worker (``serve_workers``): the same specs."""
    from baton.cli.serving import SERVE_CONFIG, server_app
    from baton.cli.specs import specs_from_json

    config = json.loads(os.environ[SERVE_CONFIG])
    app, _ = server_app(specs_from_json(config["specs"]), _model(), _state(config.get("state")))
    return app


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        port: int = typer.Option(8765, help="Port to serve on."),
        host: str = typer.Option("127.0.0.1", help="Interface to bind."),
        rebuild: bool = typer.Option(False, help="Start the demo afresh: database, memory and conversations."),
        state: str | None = StateOption,
        log_level: str = typer.Option("info", help="debug (every step as a JSON line), info, warning or error."),
    ) -> None:
        """Build the demo workspace and serve it; prints a URL that logs the browser in. One demo
        per BATON_HOME: while one runs, this prints its link (and --rebuild refuses)."""
        from baton.cli.listening import bind_listener
        from baton.cli.serving import demo_app, log_level_number, serve_app, smoke_check
        from baton.demo.service import DemoService

        log_level_number(log_level)  # a bad --log-level is one line, before anything starts
        where = _state(state)
        service = DemoService(where.home / "demo")
        smoke = bool(os.environ.get("BATON_DEMO_SMOKE"))  # checks, never serves: claims nothing
        running = (service.running() if rebuild else None) if smoke else service.claim(f"http://{host}:{port}")
        if running is not None:
            raise typer.Exit(_report_running_demo(running, rebuild, where))
        if smoke:
            app, key = demo_app(_demo_workspace(rebuild, where), where)
            raise typer.Exit(asyncio.run(smoke_check(app, key, console)))
        try:
            with bind_listener(host, port) as listener:  # before the link: a taken port is one line, not another server's page
                app, key = demo_app(_demo_workspace(rebuild, where), where)
                service.publish(key)
                url = f"http://{host}:{port}/#key={key}"
                console.print(f"\n[bold green]Baton demo[/bold green] is running. Open:\n\n  [link={url}]{url}[/link]\n")
                console.print("Try: [italic]What was Pokemon revenue by month in 2025?[/italic]   (Ctrl+C to stop)")
                serve_app(app, host, port, log_level, listener)
        finally:
            service.release()

    @app.command()
    def ask(
        question: str = typer.Argument(..., help="The question, in plain language."),
        database: str | None = typer.Option(None, help="Ask any SQLAlchemy database URL instead of the demo (needs a model)."),
        docs: Path | None = typer.Option(None, help="With --database: a folder of documents to answer from (and to use as doctrine)."),
        chart: Path | None = typer.Option(None, help="Write the answer's chart to this .svg or .png file."),
        session: str | None = typer.Option(None, help="Continue this session (see `baton sessions`)."),
        json_output: bool = typer.Option(False, "--json", help="Print the full answer as JSON."),
        state: str | None = StateOption,
        semantic: Path | None = SemanticOption,
        unsafe_allow_privileged_role: bool = typer.Option(
            False, "--unsafe-allow-privileged-role",
            help="Run model-written SQL even if the --database role can read server files, run programs or read secrets."),
        allow_function: list[str] = AllowFunctionOption,
        freshness_sql: str | None = FreshnessSQLOption,
        freshness_column: str | None = FreshnessColumnOption,
        max_data_age: str | None = MaxDataAgeOption,
        config: Path | None = ConfigOption,
        workspace: str | None = WorkspaceOption,
    ) -> None:
        """Ask one question and print the answer, its table and its SQL."""
        from baton.cli.db import unsafe_privileged_role_opt_in
        from baton.cli.serving import local_workspace
        from baton.state import SessionNotFound

        privileged = unsafe_privileged_role_opt_in(unsafe_allow_privileged_role)
        if chart is not None:  # before the question is asked: the answer is not lost to a path that cannot be written
            check_chart_path(chart)
        if database:  # one clear line and exit 2 for a URL that cannot be used (no traceback, no answer)
            from baton.cli.database_check import refuse_unusable_database

            refuse_unusable_database(database, allow_privileged_role=privileged)
        freshness = _freshness(database, freshness_sql, freshness_column, max_data_age)

        spec = cli_spec(config, workspace, database=database, docs=docs, semantic=_semantic_file(semantic), privileged=privileged,
                        freshness=freshness, allow_functions=allowed_functions(allow_function, database), state=state)

        async def run() -> int:
            async with local_workspace(spec, spec_model(spec, _model()), _state(spec.state), observe=True) as ws:
                with notes.status("Thinking...", spinner="dots"):
                    try:
                        answer = await ws.answer(question, session)
                    except SessionNotFound:
                        notes.print(f"[red]error:[/red] there is no session {session!r} (see `baton sessions`)")
                        return 2
            if json_output:
                console.print_json(answer.to_json())
            else:
                print_answer(console, answer)
            if chart is not None:
                write_chart(console, answer, chart)
            return 1 if answer.error else 0

        raise typer.Exit(asyncio.run(run()))

    @app.command()
    def serve(
        port: int = typer.Option(8765, help="Port to serve on."),
        host: str = typer.Option("127.0.0.1", help="Interface to bind."),
        database: str | None = typer.Option(None, help="Serve a workspace over this database URL (needs a model)."),
        docs: Path | None = typer.Option(None, help="With --database: a folder of documents to answer from (and to use as doctrine)."),
        log_level: str = typer.Option("info", help="debug (every step as a JSON line), info, warning or error."),
        state: str | None = StateOption,
        unsafe_allow_privileged_role: bool = typer.Option(
            False, "--unsafe-allow-privileged-role",
            help="Run model-written SQL even if the --database role can read server files, run programs or read secrets."),
        allow_function: list[str] = AllowFunctionOption,
        mcp: list[str] = McpOption,
        mcp_allow: list[str] = McpAllowOption,
        workers: int = typer.Option(1, "--workers", min=1, help="Processes serving this port (each builds the same app over the same state)."),
        semantic: Path | None = SemanticOption,
        freshness_sql: str | None = FreshnessSQLOption,
        freshness_column: str | None = FreshnessColumnOption,
        max_data_age: str | None = MaxDataAgeOption,
        config: Path | None = ConfigOption,
        workspace: str | None = WorkspaceOption,
    ) -> None:
        """Serve the HTTP API and the web page: every workspace of --config, the workspace over
        --database, else the demo.
        Keys: BATON_API_KEYS="key=workspace,..."; without it each workspace's key kept in the
        state (made on first start, the same on every replica) is printed."""
        from baton.cli.db import unsafe_privileged_role_opt_in
        from baton.cli.listening import bind_listener
        from baton.cli.serving import log_level_number, one_state, serve_app, server_app
        from baton.cli.specs import project_specs, specs_to_json, with_flags

        log_level_number(log_level)  # a bad --log-level is one line, before anything starts
        privileged = unsafe_privileged_role_opt_in(unsafe_allow_privileged_role)
        if database:  # refuse to start on a database that cannot be used
            from baton.cli.database_check import refuse_unusable_database

            refuse_unusable_database(database, allow_privileged_role=privileged)
        freshness = _freshness(database, freshness_sql, freshness_column, max_data_age)
        servers = mcp_specialists(mcp, mcp_allow)  # --mcp NAME=COMMAND_OR_URL --mcp-allow NAME=TOOL,...
        flags = dict(database=database, docs=docs, semantic=_semantic_file(semantic), mcp=servers, privileged=privileged,
                     freshness=freshness, allow_functions=allowed_functions(allow_function, database), state=state)
        specs = [with_flags(s, **flags) for s in project_specs(config, workspace)] or [with_flags(None, **flags)]
        state_url = one_state(specs, state)
        where = _state(state_url)
        with bind_listener(host, port) as listener:  # before any link is printed: a taken port is one line and exit 2
            if workers > 1:  # N processes on one port: each worker builds the app (baton.cli.serving.serve_workers)
                from baton.cli.serving import check_before_workers, printed_keys, serve_workers

                check_before_workers(specs, _model())
                for key, name in printed_keys(specs, where):
                    console.print(f"workspace [bold]{name}[/bold]: http://{host}:{port}/#key={key}")
                serve_workers({"specs": specs_to_json(specs), "state": state_url}, host, port, workers, log_level, listener)
                return
            app, printed = server_app(specs, _model(), where)
            for key, name in printed:
                console.print(f"workspace [bold]{name}[/bold]: http://{host}:{port}/#key={key}")
            if not printed:  # keys from BATON_API_KEYS: say where, never which key
                console.print(f"Serving on http://{host}:{port}/ (API keys from BATON_API_KEYS)")
            serve_app(app, host, port, log_level, listener)

    @app.command()
    def agents(database: str | None = typer.Option(None, help="List the agents of a database workspace instead of the demo."),
               config: Path | None = ConfigOption, workspace: str | None = WorkspaceOption) -> None:
        """List the specialists a workspace's orchestrator routes to."""
        from rich.table import Table

        from baton.cli.serving import local_workspace

        if database:  # one line and exit 2 for a URL that cannot be used, as ask and serve
            from baton.cli.database_check import refuse_unusable_database

            refuse_unusable_database(database)

        spec = cli_spec(config, workspace, database=database)

        async def run():
            async with local_workspace(spec, spec_model(spec, _model()), _state(spec.state)) as ws:
                return ws

        ws = asyncio.run(run())
        table = Table(title=f"{ws.orchestrator.name} ({ws.name})")
        table.add_column("agent")
        table.add_column("tool")
        table.add_column("description")
        for specialist in ws.catalog.specialists():
            table.add_row(specialist.name, specialist.tool, specialist.description)
        console.print(table)
