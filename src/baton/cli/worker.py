"""``baton worker``: run the stages of durable pipelines, for any replica to start and follow.

A worker builds the same workspace ``baton serve`` does, from the same spec (``--config`` and
``--workspace``, or ``--database`` and ``--docs``, or the demo: ``baton.cli.specs``), so its
stages answer with the same semantic model, MCP servers, freshness and role decision, on the
same state (``--state`` / ``BATON_STATE_URL``), then consumes the pipeline
queue: at most ``--concurrency`` runs at once, each stage with the workspace's agents. Live
events go out on the state database (``LISTEN/NOTIFY``), so a client following a run on any
replica sees them. Workers keep heartbeats and watch each other's: the runs of a worker
that died (SIGKILL, a lost machine) are taken over by a live one once its heartbeat has not
moved for ``--lapse`` seconds, and resume after their last completed stage.

SIGTERM or Ctrl+C stops it: runs in flight stay pending and are taken over (or recovered
when a worker with the same ``--executor-id`` starts again).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from baton.cli.specs import ConfigOption, WorkspaceOption, cli_spec

console = Console()


def worker_workspace(spec: Any, model: Any, host_options: dict[str, Any]) -> tuple[Any, Any]:
    """The workspace ``spec`` declares, as ``baton serve`` builds it, with this process running
    its pipelines' stages; and its state. No model (none in the spec, none from
    ``BATON_MODEL``), or pipelines that are not durable: one line and exit 2."""
    from baton.cli.main_commands import _state
    from baton.cli.serving import open_workspace
    from baton.cli.specs import spec_model

    model = spec_model(spec, model)
    if model is None or spec.pipelines != "durable":
        console.print("[red]A worker runs the stages of durable pipelines, which need a model:[/red] set BATON_MODEL "
                      "(and leave the workspace's pipelines durable).")
        raise typer.Exit(2)
    where = _state(spec.state)
    return open_workspace(spec, model, where, run_stages=True, host_options=host_options), where


def register(app: typer.Typer) -> None:
    @app.command()
    def worker(
        database: str | None = typer.Option(None, help="The workspace over this database URL (as `baton serve --database`); default: the demo."),
        docs: Path | None = typer.Option(None, help="With --database: its folder of documents (as `baton serve --docs`)."),
        state: str | None = typer.Option(None, "--state", help="Database URL of the shared state (default: $BATON_STATE_URL, else SQLite files in $BATON_HOME)."),
        concurrency: int | None = typer.Option(None, help="At most this many pipelines at once in this worker (default: no limit)."),
        executor_id: str | None = typer.Option(None, "--executor-id", help="This worker's identity (default: host, pid and a random suffix)."),
        heartbeat: float = typer.Option(5.0, help="Heartbeat interval, seconds."),
        lapse: float = typer.Option(30.0, help="A worker whose heartbeat has not moved for this long is taken over, seconds."),
        poll: float = typer.Option(1.0, help="Queue polling interval, seconds."),
        config: Path | None = ConfigOption,
        workspace: str | None = WorkspaceOption,
    ) -> None:
        """Run pipeline stages from the queue until stopped."""
        from baton.cli.main_commands import _model

        overrides: dict[str, Any] = {"heartbeat_interval_s": heartbeat, "heartbeat_lapse_s": lapse, "queue_polling_interval_s": poll,
                     "worker_concurrency": concurrency}
        if executor_id:
            overrides["executor_id"] = executor_id
        spec = cli_spec(config, workspace, database=database, docs=docs, state=state)
        ws, where = worker_workspace(spec, _model(), overrides)
        host = ws.pipelines.host
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        try:
            host.start()
            console.print(f"pipeline worker [bold]{host.executor_id}[/bold] serving queue {host.config.queue_name} "
                          f"for workspace {ws.name} (state: {where.describe()})", soft_wrap=True)
            stop.wait()
        finally:
            asyncio.run(ws.aclose())
