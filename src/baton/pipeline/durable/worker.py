"""A worker process: runs durable pipelines from the queue, keeps a heartbeat.

``PipelineWorker(config, runner=None).start()`` launches DBOS in this process (one DBOS per
process), listening to ``config.queue_name`` only, registers the workflow, and starts the
heartbeat (``heartbeat.py``). The stage runner is given directly or built from
``config.runner_factory`` (``"module:function"``), which is how a separate process gets its
agents. ``stop()`` shuts DBOS down; pipelines still running stay PENDING and are recovered by
a restart with the same executor id or taken over by a live worker once the heartbeat lapses.

From a shell::

    python -m baton.pipeline.durable --database-url postgresql://... \\
        --runner myapp.pipeline:make_runner
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from baton.pipeline.durable.config import DurableConfig, load_runner_factory
from baton.pipeline.durable.heartbeat import Heartbeat
from baton.pipeline.durable.run_log import RunLog, RunLogWriter
from baton.pipeline.durable.workflow import WORKFLOW_NAME, Publish, clear_runtime, install_runtime, workflow_function
from baton.pipeline.errors import PipelineConfigurationError

if TYPE_CHECKING:
    from baton.pipeline.runners import StageRunner

log = logging.getLogger("baton.pipeline.durable")


class PipelineWorker:
    def __init__(self, config: DurableConfig, runner: StageRunner | Mapping[str, StageRunner] | None = None, *,
                 publish: Publish | None = None) -> None:
        """``runner``: one for every workspace, or one per workspace (see ``workflow.py``);
        ``publish(channel, event)``: where live events go (none: the durable log only)."""
        self.config = config.with_executor_id()
        self._runner = runner
        self._publish = publish
        self._run_log: RunLogWriter | None = None
        self.heartbeat: Heartbeat | None = None
        self._started = False

    @property
    def executor_id(self) -> str:
        assert self.config.executor_id is not None
        return self.config.executor_id

    def start(self) -> PipelineWorker:
        from dbos import DBOS

        if self._started:
            return self
        runner = self._runner
        if runner is None:
            if not self.config.runner_factory:
                raise PipelineConfigurationError("a worker needs a runner: pass runner=... or set DurableConfig.runner_factory")
            runner = load_runner_factory(self.config.runner_factory)
        self._run_log = RunLogWriter(RunLog(self.config.sqlalchemy_url(), self.config.system_schema),
                                     relay=self._publish)
        install_runtime(runner, checkpoint_timeout_s=self.config.checkpoint_timeout_s, publish=self._publish, run_log=self._run_log)
        _drop_closed_log_handlers()
        workflow_function()
        cfg = self.config
        DBOS(config={
            "name": cfg.app_name,
            "system_database_url": cfg.system_database_url,
            "application_version": cfg.application_version,
            "executor_id": self.executor_id,
            "log_level": cfg.log_level,
            "dbos_system_schema": cfg.dbos_system_schema,
            "notification_listener_polling_interval_sec": min(1.0, cfg.queue_polling_interval_s),
        })
        try:
            DBOS.listen_queues([cfg.queue_name])
            DBOS.launch()
            DBOS.register_queue(cfg.queue_name, worker_concurrency=cfg.worker_concurrency,
                                polling_interval_sec=cfg.queue_polling_interval_s, on_conflict="always_update")
            self.heartbeat = Heartbeat(
                cfg.sqlalchemy_url(), schema=cfg.system_schema,
                executor_id=self.executor_id, queue_name=cfg.queue_name,
                interval_s=cfg.heartbeat_interval_s, lapse_s=cfg.heartbeat_lapse_s, take_over=self._take_over,
            )
            self.heartbeat.start()
        except BaseException:
            DBOS.destroy()
            clear_runtime()
            self._run_log.close()
            raise
        self._started = True
        return self

    def _take_over(self, dead_executor_id: str) -> int:
        """Put the dead executor's unfinished pipelines back on the queue."""
        from dbos import DBOS

        pending = DBOS.list_workflows(
            status="PENDING", executor_id=dead_executor_id, name=WORKFLOW_NAME,
            app_version=self.config.application_version, load_input=False, load_output=False,
        )
        for workflow in pending:
            DBOS.resume_workflow(workflow.workflow_id, queue_name=self.config.queue_name)
        return len(pending)

    def stop(self) -> None:
        from dbos import DBOS

        if not self._started:
            return
        if self.heartbeat is not None:
            self.heartbeat.stop()
        DBOS.destroy()
        clear_runtime()
        if self._run_log is not None:
            self._run_log.close()
        self._started = False

    def __enter__(self) -> PipelineWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run_forever(self) -> None:
        """Start, then serve until SIGTERM or SIGINT."""
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        self.start()
        log.warning("pipeline worker %s serving queue %s", self.executor_id, self.config.queue_name)
        try:
            stop.wait()
        finally:
            self.stop()


def _drop_closed_log_handlers() -> None:
    """DBOS logs through a handler bound to the ``sys.stderr`` of its first start; a process
    that swapped stderr since (a test runner, an embedding app) would fail on every log line.
    Handlers whose stream is closed are dropped; DBOS makes a new one on the current stderr."""
    dbos_logger = logging.getLogger("dbos")
    for handler in list(dbos_logger.handlers):
        if getattr(getattr(handler, "stream", None), "closed", False):
            dbos_logger.removeHandler(handler)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m baton.pipeline.durable", description="Run durable Baton pipelines.")
    parser.add_argument("--database-url", help="DBOS system database (SQLite or PostgreSQL URL)")
    parser.add_argument("--runner", help="'module:function' that returns the StageRunner")
    parser.add_argument("--queue", help="queue name")
    parser.add_argument("--executor-id")
    parser.add_argument("--app-name")
    parser.add_argument("--concurrency", type=int, help="pipelines at once in this worker")
    parser.add_argument("--heartbeat", type=float, help="heartbeat interval, seconds")
    parser.add_argument("--lapse", type=float, help="heartbeat lapse that marks a worker dead, seconds")
    parser.add_argument("--poll", type=float, help="queue polling interval, seconds")
    parser.add_argument("--checkpoint-timeout", type=float, help="how long a checkpoint waits, seconds")
    args = parser.parse_args(argv)
    overrides = {
        key: value for key, value in {
            "system_database_url": args.database_url, "runner_factory": args.runner, "queue_name": args.queue,
            "executor_id": args.executor_id, "app_name": args.app_name, "worker_concurrency": args.concurrency,
            "heartbeat_interval_s": args.heartbeat, "heartbeat_lapse_s": args.lapse,
            "queue_polling_interval_s": args.poll, "checkpoint_timeout_s": args.checkpoint_timeout,
        }.items() if value is not None
    }
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    PipelineWorker(DurableConfig.from_env(**overrides)).run_forever()


if __name__ == "__main__":
    main()
