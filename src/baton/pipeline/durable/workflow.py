"""The pipeline as a DBOS workflow, each stage a DBOS step.

One workflow, registered under the explicit name ``baton.pipeline.run`` (DBOS names
workflows by bare function name otherwise, and two modules defining ``run`` would
collide). It drives the same ``PipelineState`` as the in-process executor (``engine.advance``)
with a different layer runner: every stage of a layer is a step, the layer's step ids are
reserved in plan order (``DBOS.reserve_step``) and the steps run concurrently, so replay
after a crash matches each stage with its recorded result. A stage's ``StageResult`` is the
step's checkpointed return value, as JSON (``StageResult.to_dict``).

Consequences a user must know:
- **A completed stage never runs again**: on recovery its recorded result is replayed.
- **A stage in flight at a crash runs again** (at-least-once): stages must be idempotent
  (read-only queries are; a stage that writes must tolerate running twice).
- A checkpoint waits with ``DBOS.recv`` on the topic ``baton.checkpoint``; the decision is
  stored durably when sent (``PipelineClient.decide``), so it may be sent while no worker
  runs, and the wait survives restarts. A decision that cannot apply (wrong stage, bad
  edit) is refused (published as the ``decision_error`` event) and the wait goes on.
- Progress is published as DBOS events: ``status`` (the run's status and checkpoint stage),
  ``outcome`` (the latest outcome AIMessage as a dict); tracker events go to the DBOS stream
  ``events``, one batch per phase (up to a checkpoint or the end), because every stream
  write is a durable write. Tracker events of the agents inside a stage stay in the worker.

Importing this module does not import ``dbos``; ``workflow_function()`` registers the
workflow (once per process) when a worker starts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Any, Callable

from baton.pipeline.engine import StageDone, advance
from baton.pipeline.errors import CheckpointDecisionError, PipelineConfigurationError
from baton.pipeline.models import ExecutionPlan, PlanStage, StageResult, stage_from_dict
from baton.pipeline.runners import StageRunner
from baton.pipeline.state import CheckpointDecision, PipelineState

WORKFLOW_NAME = "baton.pipeline.run"
DECISION_TOPIC = "baton.checkpoint"
EVENTS_STREAM = "events"


@dataclass
class _Runtime:
    runner: StageRunner
    checkpoint_timeout_s: float


_runtime: _Runtime | None = None  # one DBOS per process, so one runtime per process


def install_runtime(runner: StageRunner, *, checkpoint_timeout_s: float) -> None:
    global _runtime
    _runtime = _Runtime(runner, checkpoint_timeout_s)


def clear_runtime() -> None:
    global _runtime
    _runtime = None


@functools.cache
def workflow_function() -> Callable[..., Any]:
    """Register the workflow with DBOS (first call in a process) and return it."""
    from dbos import DBOS

    return DBOS.workflow(name=WORKFLOW_NAME)(_pipeline_workflow)


async def _pipeline_workflow(plan: dict[str, Any], request: dict[str, Any], units: dict[str, str]) -> dict[str, Any]:
    from dbos import DBOS

    if _runtime is None:
        raise PipelineConfigurationError("this process has no pipeline runtime: start it with PipelineWorker")
    workflow_id = DBOS.workflow_id or ""
    state = PipelineState.start(ExecutionPlan.from_dict(plan))
    pending_events: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []

    def emit(type: str, **data: Any) -> None:
        pending_events.append({"type": type, "data": data, "workflow_id": workflow_id, "ts": time.time()})

    async def run_layer(stages: list[PlanStage], done: StageDone) -> None:
        reservations = [DBOS.reserve_step() for _ in stages]  # step ids in plan order
        for stage in stages:
            emit("stage.start", stage_id=stage.stage_id, tool=stage.tool, question=stage.question)
        raw = await asyncio.gather(*(
            reservation.run_async({"name": f"stage:{stage.stage_id}"}, _run_stage_step, dataclasses.asdict(stage),
                                  {d: r.to_dict() for d, r in state.inputs_for(stage).items()}, request)
            for reservation, stage in zip(reservations, stages)
        ))
        for stage, result in zip(stages, raw):
            done(stage, StageResult.from_dict(result))

    while True:
        produced = await advance(state, workflow_id, run_layer, emit, units=units)
        messages += [m.to_dict() for m in produced]
        if pending_events:  # one stream write per phase: each write is a durable step
            await DBOS.write_stream_async(EVENTS_STREAM, list(pending_events))
            pending_events.clear()
        await DBOS.set_event_async("outcome", messages[-1])
        await DBOS.set_event_async("status", {"status": state.status, "checkpoint_stage": state.checkpoint_stage})
        if state.status != "paused":
            break
        await _wait_for_decision(state)
    await DBOS.close_stream_async(EVENTS_STREAM)
    return {"status": state.status, "state": state.to_dict(), "messages": messages}


async def _wait_for_decision(state: PipelineState) -> None:
    from dbos import DBOS

    assert _runtime is not None
    while True:
        raw = await DBOS.recv_async(DECISION_TOPIC, timeout_seconds=_runtime.checkpoint_timeout_s)
        if raw is None:
            timeout = _runtime.checkpoint_timeout_s
            state.apply(CheckpointDecision("reject", reason=f"no decision within {timeout:g} s"))
            return
        try:
            state.apply(CheckpointDecision.from_dict(raw))
            return
        except CheckpointDecisionError as exc:
            await DBOS.set_event_async("decision_error", {"decision": raw, "error": str(exc)})


async def _run_stage_step(stage_raw: dict[str, Any], inputs_raw: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    from dbos import DBOS

    from baton.agents import AgentContext

    stage = stage_from_dict(stage_raw)
    started = time.time()
    try:
        assert _runtime is not None, "no pipeline runtime in this process"
        context = AgentContext(
            user_question=request.get("question", ""),
            project_id=request.get("project_id", "default"),
            workspace=request.get("workspace", "default"),
            user_id=request.get("user_id"),
            workflow_id=DBOS.workflow_id or "",
            extra=request.get("extra") or {},
        )
        inputs = {sid: StageResult.from_dict(r) for sid, r in inputs_raw.items()}
        result = await _runtime.runner.run(stage, inputs, context)
    except Exception as exc:  # a failing stage is a result, never a crashed workflow
        result = StageResult(stage.stage_id, status="error", error=f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__)
    if result.started_at is None:
        result.started_at = started
    if result.finished_at is None:
        result.finished_at = time.time()
        result.duration_ms = round((result.finished_at - started) * 1000, 3)
    return result.to_dict()
