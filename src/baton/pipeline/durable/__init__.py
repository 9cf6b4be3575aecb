"""Durable pipelines on DBOS: a pipeline is a DBOS workflow, each stage a step.

Use ``PipelineWorker`` in the processes that run stages and ``PipelineClient`` where plans
are submitted and checkpoints answered. Nothing here imports ``dbos`` until a worker or a
client is created. Stages are at-least-once: one in flight at a crash runs again, so stages
must be idempotent (see ``workflow.py``); completed stages never run twice.
"""

from baton.pipeline.durable.client import (
    DurableResult,
    DurableStatus,
    PipelineClient,
    PipelineRunFailedError,
    PipelineTimeoutError,
)
from baton.pipeline.durable.config import DurableConfig, load_runner_factory
from baton.pipeline.durable.worker import PipelineWorker

__all__ = [
    "DurableConfig", "DurableResult", "DurableStatus", "PipelineClient", "PipelineRunFailedError",
    "PipelineTimeoutError", "PipelineWorker", "load_runner_factory",
]
