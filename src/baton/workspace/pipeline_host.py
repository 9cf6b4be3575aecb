"""``PipelineHost``: one process's part in durable pipelines.

Every process that serves workspaces has one host (DBOS allows one instance per process):

- a producer (``PipelineClient``) to start runs, read their progress and send decisions;
- the event bus (``bus.py``) on which live events of runs arrive, wherever they execute (a
  worker numbers and stores each event before it publishes it: ``pipeline/durable/run_log.py``);
- with ``run_stages``, the worker: DBOS launched in this process, consuming the queue with
  the stage runners of this process's workspaces (``register``). ``baton worker`` and the
  embedded default (``baton serve`` without a state URL) run stages; ``baton serve`` on a
  state URL leaves them to the workers.

The system database is the state's (``State.pipelines_url``): ``$BATON_HOME/pipelines.sqlite``
embedded, the state database (schema ``dbos``) at scale. A host that only produces creates
and upgrades that schema itself (DBOS's migrations, which take their own lock on
PostgreSQL), so replicas may start before any worker.

Stages run on the serving loop. DBOS runs workflows on its own event-loop thread; a stage's
agents (model clients, connections) belong to the loop that serves requests, so a host that
knows that loop (``start(loop)``) runs each stage's coroutine there and awaits its result
from DBOS's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import TYPE_CHECKING, Any

from baton.settings import Settings

if TYPE_CHECKING:
    from baton.agents import AgentContext
    from baton.pipeline.durable import DurableConfig, PipelineClient
    from baton.pipeline.models import PlanStage, StageResult
    from baton.pipeline.runners import StageRunner
    from baton.state.bus import EventBus
    from baton.state.location import State

log = logging.getLogger("baton.workspace.pipelines")


class _OnLoop:
    """A stage runner whose stages run on ``loop`` whatever loop calls it."""

    def __init__(self, runner: StageRunner, loop: asyncio.AbstractEventLoop) -> None:
        self.runner, self.loop = runner, loop

    async def run(self, stage: PlanStage, inputs: dict[str, StageResult], context: AgentContext) -> StageResult:
        if asyncio.get_running_loop() is self.loop:
            return await self.runner.run(stage, inputs, context)
        future = asyncio.run_coroutine_threadsafe(self.runner.run(stage, inputs, context), self.loop)
        return await asyncio.wrap_future(future)


class PipelineHost:
    def __init__(self, config: DurableConfig, bus: EventBus, *, run_stages: bool, state: State | None = None) -> None:
        self.config = config
        self.bus = bus
        self.run_stages = run_stages
        self.state = state  # its start-up lock serialises schema creation and launches
        self.runners: dict[str, Any] = {}
        self._client: PipelineClient | None = None
        self._worker: Any = None
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def for_state(cls, state: State, *, run_stages: bool | None = None, events_url: str | None = None,
                  settings: Settings | None = None, **config: Any) -> PipelineHost:
        """The host of a process on ``state``: stages run here by default when the state is
        embedded. ``config`` overrides ``DurableConfig`` fields (queue, concurrency, ...);
        ``settings`` (default ``Settings.from_env()``) gives the ``BATON_PIPELINE_*`` ones and
        ``BATON_EVENTS_URL`` when ``events_url`` is not given."""
        from baton.pipeline.durable import DurableConfig

        settings = settings if settings is not None else Settings.from_env()
        state.check_versions()  # DBOS's tables (and every other family) written by a newer Baton: refused here too
        durable = DurableConfig.from_settings(settings, system_database_url=state.pipelines_url, **config)
        bus = bus_for(state.url, events_url or settings.events_url or None)
        return cls(durable, bus, run_stages=state.embedded if run_stages is None else run_stages, state=state)

    def register(self, workspace: str, runner: StageRunner) -> None:
        """Stages of ``workspace`` run with ``runner`` (in this process, if it runs stages)."""
        self.runners[workspace] = runner

    @property
    def client(self) -> PipelineClient:
        with self._lock:
            if self._client is None:
                from baton.pipeline.durable import PipelineClient

                with self._startup():
                    ensure_system_database(self.config)
                self._client = PipelineClient(self.config)
            return self._client

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> PipelineHost:
        """Launch the worker (once) when this host runs stages; ``loop``: where they run."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this pipeline host is closed")
            if not self.run_stages or self._worker is not None:
                return self
            from baton.pipeline.durable import PipelineWorker
            from baton.pipeline.durable.dbos_outages import quiet_dbos_outages

            quiet_dbos_outages()  # DBOS's pollers: one line per outage, not a traceback per poll
            runners = {name: _OnLoop(runner, loop) for name, runner in self.runners.items()} if loop is not None else dict(self.runners)
            worker = PipelineWorker(self.config, runners, publish=self.bus.publish)
            with self._startup():
                worker.start()
            self._worker = worker
            self.config = worker.config  # with its executor id
        return self

    async def ensure_started(self) -> PipelineHost:
        if self.run_stages and self._worker is None:
            await asyncio.to_thread(self.start, asyncio.get_running_loop())  # DBOS's sync API refuses a running loop
        return self

    def _startup(self) -> contextlib.AbstractContextManager[None]:
        return self.state.startup_lock("pipelines") if self.state is not None else contextlib.nullcontext()

    @property
    def executor_id(self) -> str | None:
        return self.config.executor_id

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            worker, self._worker = self._worker, None
            client, self._client = self._client, None
        if client is not None:
            client.close()
        if worker is not None:
            worker.stop()
        self.bus.close()


def bus_for(state_url: str | None, events_url: str | None = None) -> EventBus:
    """The event bus for this state (``bus.py``): ``LocalBus`` embedded, ``PostgresBus`` on a
    PostgreSQL state; ``events_url`` (``BATON_EVENTS_URL``) names another PostgreSQL database
    or a Redis server (``RedisBus``, ``baton.state.bus_redis``). A Redis server that does not answer at
    start-up is ``EventBusUnavailableError``: a replica that could not relay events would look
    healthy and leave every live stream of a run on a worker silent."""
    from baton.errors import ConfigurationError
    from baton.state.bus import LocalBus, PostgresBus
    from baton.store_backends import backend_for_url

    url = events_url or state_url
    if url is None:
        return LocalBus()
    if url.startswith(("redis://", "rediss://")):
        from baton.state.bus_redis import RedisBus

        return RedisBus(url).check()
    backend = backend_for_url(url)
    if backend is None or not backend.listens:
        raise ConfigurationError("BATON_EVENTS_URL must be a PostgreSQL (postgresql://) or Redis (redis://, rediss://) URL, "
                                 f"got {url.split(':', 1)[0]!r}")
    return PostgresBus(url)


def ensure_system_database(config: DurableConfig) -> None:
    """Create and upgrade DBOS's system database if a worker has not yet: DBOS's own
    migrations (serialised by DBOS's advisory lock on PostgreSQL; on SQLite the caller holds
    the state's start-up lock). Uses DBOS's system-database class, as ``DBOS.launch`` does."""
    from dbos._serialization import DefaultSerializer
    from dbos._sys_db import SystemDatabase

    sys_db = SystemDatabase.create(
        system_database_url=config.system_database_url, engine_kwargs={"pool_size": 1, "max_overflow": 0}, engine=None,
        schema=config.system_schema, serializer=DefaultSerializer(), executor_id=None,
    )
    try:
        sys_db.run_migrations()
    finally:
        sys_db.destroy()
