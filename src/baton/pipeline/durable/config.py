"""Configuration of durable pipelines, and loading the stage runner a worker uses.

Defaults are for one machine: a SQLite system database file in the working directory. For
many worker processes (on many machines) sharing one queue, point
``system_database_url`` at PostgreSQL; every worker and every producer must use the same
URL, ``app_name``, ``queue_name`` and ``application_version``.

``application_version`` is explicit on purpose: DBOS's default is a hash of the source, so
after any code edit a restarted worker would leave the old pending pipelines stranded.
Bump it only when a change makes old runs unreplayable (the stage order a plan produces
changed), and drain the old version first.
"""

from __future__ import annotations

import importlib
import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from baton.pipeline.errors import PipelineConfigurationError
from baton.settings import Settings
from baton.store_backends import backend_for_url, url_backend

if TYPE_CHECKING:
    from baton.pipeline.runners import StageRunner

DEFAULT_DATABASE_URL = "sqlite:///baton_pipelines.sqlite"


@dataclass(frozen=True)
class DurableConfig:
    system_database_url: str = DEFAULT_DATABASE_URL
    app_name: str = "baton"
    application_version: str = "baton-pipeline-2"  # 2: the state event, live events, the status after each phase
    queue_name: str = "baton-pipelines"
    runner_factory: str | None = None
    """``"package.module:function"``: called with no arguments in each worker process, it
    returns the ``StageRunner`` (agents built with their own models and connections)."""
    executor_id: str | None = None
    """This worker's identity. Default: unique per process. A worker restarted with the same
    id recovers its own unfinished pipelines at once; with a new id, a live worker takes
    them over once the old id's heartbeat has lapsed."""
    worker_concurrency: int | None = None
    """At most this many pipelines run at once in one worker (None: no limit)."""
    heartbeat_interval_s: float = 5.0
    heartbeat_lapse_s: float = 30.0
    """A worker whose heartbeat has not moved for this long is taken for dead."""
    queue_polling_interval_s: float = 1.0
    checkpoint_timeout_s: float = 7 * 24 * 3600.0
    """How long a checkpoint waits for its decision; then the run ends as rejected."""
    dbos_system_schema: str = "dbos"
    units: Mapping[str, str] = field(default_factory=dict)
    log_level: str = "WARNING"

    def __post_init__(self) -> None:
        problems = []
        if backend_for_url(self.system_database_url) is None:
            problems.append(f"system_database_url must be a SQLite or PostgreSQL URL, got {self.system_database_url!r}")
        if self.heartbeat_interval_s <= 0:
            problems.append("heartbeat_interval_s must be > 0")
        if self.heartbeat_lapse_s <= self.heartbeat_interval_s:
            problems.append("heartbeat_lapse_s must be longer than heartbeat_interval_s")
        if self.checkpoint_timeout_s <= 0:
            problems.append("checkpoint_timeout_s must be > 0")
        if problems:
            raise PipelineConfigurationError("; ".join(problems))

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> DurableConfig:
        """``BATON_PIPELINE_DATABASE_URL``, ``BATON_PIPELINE_QUEUE``, ``BATON_PIPELINE_RUNNER``
        and ``BATON_PIPELINE_EXECUTOR_ID`` of ``settings`` (unset ones keep their defaults);
        keyword overrides win."""
        values: dict[str, Any] = {}
        for key, value in (("system_database_url", settings.pipeline_database_url), ("queue_name", settings.pipeline_queue),
                           ("runner_factory", settings.pipeline_runner), ("executor_id", settings.pipeline_executor_id)):
            if value:
                values[key] = value
        return cls(**{**values, **overrides})

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> DurableConfig:
        """``from_settings(Settings.from_env(env), **overrides)``."""
        return cls.from_settings(Settings.from_env(env), **overrides)

    def with_executor_id(self) -> DurableConfig:
        """This config with ``executor_id`` filled in (host, pid and a random suffix)."""
        if self.executor_id:
            return self
        return replace(self, executor_id=f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}")

    @property
    def system_schema(self) -> str | None:
        """The schema of DBOS's tables and the run log: None on a backend without schemas (SQLite)."""
        return self.dbos_system_schema if url_backend(self.system_database_url).schemas else None

    def sqlalchemy_url(self) -> str:
        """The URL for our own engine (PostgreSQL through psycopg 3, like DBOS)."""
        import sqlalchemy as sa

        url = sa.make_url(self.system_database_url)
        return url_backend(url).driver_url(url).render_as_string(hide_password=False)


def load_runner_factory(spec: str) -> StageRunner:
    """Import ``"module:function"`` and call it; the result must be a ``StageRunner``."""
    from baton.pipeline.runners import StageRunner

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise PipelineConfigurationError(f"runner_factory must look like 'package.module:function', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PipelineConfigurationError(f"cannot import runner factory module {module_name!r}: {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise PipelineConfigurationError(f"{spec!r} is not a callable in {module_name!r}")
    runner = factory()
    if not isinstance(runner, StageRunner):
        raise PipelineConfigurationError(f"{spec!r} returned {type(runner).__name__}, which has no async run(stage, inputs, context)")
    return runner
