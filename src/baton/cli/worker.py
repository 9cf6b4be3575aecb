"""``baton worker``: run the stages of durable pipelines, for any replica to start and follow.

A worker builds the same workspace ``baton serve`` does (``--database`` and ``--docs``, or the
demo) on the same state (``--state`` / ``BATON_STATE_URL``), then consumes the pipeline
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

console = Console()


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
    ) -> None:
        """Run pipeline stages from the queue until stopped."""
        from baton.cli.main_commands import _demo_workspace, _model, _state
        from baton.cli.serving import check_docs
        from baton.workspace.database import open_database_workspace
        from baton.workspace.pipeline_host import PipelineHost
        from baton.workspace.planning import durable_pipelines

        model = _model()
        if model is None:
            console.print("[red]A worker runs pipeline stages, which need a model:[/red] set BATON_MODEL.")
            raise typer.Exit(2)
        where = _state(state)
        overrides: dict[str, Any] = {"heartbeat_interval_s": heartbeat, "heartbeat_lapse_s": lapse, "queue_polling_interval_s": poll,
                     "worker_concurrency": concurrency}
        if executor_id:
            overrides["executor_id"] = executor_id
        host = PipelineHost.for_state(where, run_stages=True, **overrides)
        if database:
            ws = open_database_workspace(database, model, docs=check_docs(docs), state=where, pipelines=durable_pipelines(host))
        else:
            ws = _demo_workspace(False, where, pipelines=durable_pipelines(host))
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        try:
            host.start()
            console.print(f"pipeline worker [bold]{host.executor_id}[/bold] serving queue {host.config.queue_name} "
                          f"for workspace {ws.name} (state: {where.describe()})", soft_wrap=True)
            stop.wait()
        finally:
            ws.own(host)
            asyncio.run(ws.aclose())
