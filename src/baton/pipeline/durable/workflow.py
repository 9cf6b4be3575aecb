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
- Progress is published as DBOS events: ``state`` (the ``PipelineState`` as a dict),
  ``status`` (the run's status, checkpoint stage,
  ``phase`` — how many times the run advanced — and ``decided``, the id of the last decision
  applied), ``outcome`` (the latest outcome AIMessage as a dict); tracker events go to the
  DBOS stream ``events``, one batch per phase (up to a checkpoint or the end), because every
  stream write is a durable write.
- Live events: when the runtime has a ``publish`` callable (the workspace layer gives one
  that reaches other processes), every event is also published as it happens, on the
  channel named by the workflow id: the run's own events (ids ``<workflow>:<n>``, the same
  when a recovered run replays them, so a reader drops repeats) and the events of the agents
  inside each stage (tagged with ``stage_id``). The agents' events are also returned with the
  stage's durable result and written to the phase's log (all but ``llm.token``, which would
  bloat it), so a reader that subscribes after a stage ran still sees what its agents did.
- Numbered events: a worker's runtime has a ``run_log`` (``run_log.py``) through which every
  event passes: numbered per run (``data.seq``; ``data.attempt`` counts the workflow's
  starts, so a replay after a takeover is a later attempt, numbered after what came before),
  stored, then published. That log, not the per-phase stream, is what a stream reader merges
  live events with.
- A stage runs with the starting request's model preference (``model``,
  ``preferred_provider``) and conversation, carried in the request.
- A workspace's runner: the runtime may hold one runner per workspace; a stage runs with the
  runner of its request's workspace (``"*"``: any other).

Importing this module does not import ``dbos``; ``workflow_function()`` registers the
workflow (once per process) when a worker starts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baton.events import Event, LLMToken, PipelineComplete, StageCheckpoint, StageStart
from baton.pipeline.engine import StageDone, advance
from baton.pipeline.errors import CheckpointDecisionError, PipelineConfigurationError
from baton.pipeline.models import PlanStage, StageResult, stage_from_dict
from baton.pipeline.plan import ExecutionPlan
from baton.pipeline.runners import StageRunner
from baton.pipeline.state import CheckpointDecision, PipelineState

if TYPE_CHECKING:
    from baton.pipeline.durable.run_log import RunLogWriter

log = logging.getLogger("baton.pipeline.durable")
Publish = Callable[[str, dict], None]
WORKFLOW_NAME = "baton.pipeline.run"
DECISION_TOPIC = "baton.checkpoint"
EVENTS_STREAM = "events"
AGENT_EVENTS = "agent_events"  # the key of a stage step's result that carries its agents' events


@dataclass
class _Runtime:
    runners: Mapping[str, StageRunner]
    checkpoint_timeout_s: float
    publish: Publish | None = None
    run_log: RunLogWriter | None = None  # numbers and stores events, then publishes them (run_log.py)

    def runner_for(self, workspace: str) -> StageRunner:
        runner = self.runners.get(workspace) or self.runners.get("*")
        if runner is None:
            raise PipelineConfigurationError(f"this worker runs no pipelines of workspace {workspace!r} (it has: {', '.join(sorted(self.runners))})")
        return runner

    def begin(self, workflow_id: str) -> None:
        if self.run_log is not None:
            self.run_log.begin(workflow_id)

    def end(self, workflow_id: str) -> None:
        if self.run_log is not None:
            self.run_log.end(workflow_id)

    def send(self, workflow_id: str, event: dict[str, Any]) -> None:
        if self.run_log is not None:
            self.run_log.emit(workflow_id, event)
            return
        if self.publish is None:
            return
        try:
            self.publish(workflow_id, event)
        except Exception:  # progress only: never the run's failure
            log.warning("publishing a pipeline event failed", exc_info=True)


_runtime: _Runtime | None = None  # one DBOS per process, so one runtime per process


def install_runtime(runner: StageRunner | Mapping[str, StageRunner], *, checkpoint_timeout_s: float,
                    publish: Publish | None = None, run_log: RunLogWriter | None = None) -> None:
    """``runner``: one for every workspace, or a mapping workspace -> runner (``"*"`` for
    the rest). ``publish(channel, event)`` sends live events (see the module docstring);
    with ``run_log``, events are numbered and stored first, and it publishes them."""
    global _runtime
    runners = dict(runner) if isinstance(runner, Mapping) else {"*": runner}
    _runtime = _Runtime(runners, checkpoint_timeout_s, publish, run_log)


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
    counter = iter(range(1, 1 << 62))
    runtime = _runtime
    runtime.begin(workflow_id)  # a replay after a takeover is a new attempt: numbered after what the log holds

    deferred: list[dict[str, Any]] = []

    def emit(typed: Event) -> None:
        typed.workflow_id = workflow_id
        event = {"id": f"{workflow_id}:{next(counter)}", **typed.to_dict()}
        pending_events.append(event)
        if isinstance(typed, (StageCheckpoint, PipelineComplete)):
            deferred.append(event)  # sent live once the status says so: a client may act on them at once
        else:
            runtime.send(workflow_id, event)

    async def run_layer(stages: list[PlanStage], done: StageDone) -> None:
        reservations = [DBOS.reserve_step() for _ in stages]  # step ids in plan order
        for stage in stages:
            emit(StageStart(stage_id=stage.stage_id, tool=stage.tool, question=stage.question))
        raw = await asyncio.gather(*(
            reservation.run_async({"name": f"stage:{stage.stage_id}"}, _run_stage_step, dataclasses.asdict(stage),
                                  {d: r.to_dict() for d, r in state.inputs_for(stage).items()}, request)
            for reservation, stage in zip(reservations, stages)
        ))
        for stage, result in zip(stages, raw):
            pending_events.extend(result.pop(AGENT_EVENTS, None) or ())
            done(stage, StageResult.from_dict(result))

    phase, decided = 0, None
    while True:
        produced = await advance(state, workflow_id, run_layer, emit, units=units)
        messages += [m.to_dict() for m in produced]
        phase += 1
        await DBOS.set_event_async("outcome", messages[-1])
        await DBOS.set_event_async("state", state.to_dict())
        status = {"status": state.status, "checkpoint_stage": state.checkpoint_stage, "phase": phase, "decided": decided}
        await DBOS.set_event_async("status", status)
        if pending_events:  # one stream write per phase (each write is a durable step), after the status:
            await DBOS.write_stream_async(EVENTS_STREAM, list(pending_events))  # whoever reads a checkpoint may act on it
            pending_events.clear()
        for event in deferred:
            runtime.send(workflow_id, event)
        deferred.clear()
        runtime.send(workflow_id, {"id": f"{workflow_id}:status:{phase}", "type": "pipeline.status", "data": status,
                                   "workflow_id": workflow_id, "ts": time.time()})
        if state.status != "paused":
            break
        decided = await _wait_for_decision(state)
    await DBOS.close_stream_async(EVENTS_STREAM)
    runtime.end(workflow_id)
    return {"status": state.status, "state": state.to_dict(), "messages": messages}


def decision_envelope(decision: CheckpointDecision, decision_id: str) -> dict[str, Any]:
    """What ``PipelineClient.decide`` sends: the decision and its id (a bare decision, as
    earlier versions sent, is still understood)."""
    return {"decision": decision.to_dict(), "id": decision_id}


async def _wait_for_decision(state: PipelineState) -> str | None:
    """Wait for a decision that applies; returns its id."""
    from dbos import DBOS

    assert _runtime is not None
    while True:
        raw = await DBOS.recv_async(DECISION_TOPIC, timeout_seconds=_runtime.checkpoint_timeout_s)
        if raw is None:
            timeout = _runtime.checkpoint_timeout_s
            state.apply(CheckpointDecision("reject", reason=f"no decision within {timeout:g} s"))
            return None
        decision_id = raw.get("id") if isinstance(raw, dict) and "decision" in raw else None
        body = raw["decision"] if decision_id is not None else raw
        try:
            state.apply(CheckpointDecision.from_dict(body))
            return decision_id
        except CheckpointDecisionError as exc:
            await DBOS.set_event_async("decision_error", {"decision": body, "error": str(exc), "id": decision_id})


async def _run_stage_step(stage_raw: dict[str, Any], inputs_raw: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    from dbos import DBOS

    from baton.agents import AgentContext
    from baton.messages import Message

    stage = stage_from_dict(stage_raw)
    started = time.time()
    tracker: _StageTracker | None = None
    try:
        assert _runtime is not None, "no pipeline runtime in this process"
        workflow_id = DBOS.workflow_id or ""
        workspace = request.get("workspace", "default")
        tracker = _StageTracker(_runtime, workflow_id, stage.stage_id)
        context = AgentContext(
            user_question=request.get("question", ""),
            project_id=request.get("project_id", "default"),
            workspace=workspace,
            user_id=request.get("user_id"),
            workflow_id=workflow_id,
            extra=request.get("extra") or {},
            model=request.get("model"),
            preferred_provider=request.get("preferred_provider"),
            chat_history=tuple(Message(m["role"], m["content"]) for m in request.get("chat_history") or ()),
            tracker=tracker,
        )
        inputs = {sid: StageResult.from_dict(r) for sid, r in inputs_raw.items()}
        result = await _runtime.runner_for(workspace).run(stage, inputs, context)
    except Exception as exc:  # a failing stage is a result, never a crashed workflow
        result = StageResult(stage.stage_id, status="error", error=f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__)
    if result.started_at is None:
        result.started_at = started
    if result.finished_at is None:
        result.finished_at = time.time()
        result.duration_ms = round((result.finished_at - started) * 1000, 3)
    return {**result.to_dict(), AGENT_EVENTS: tracker.kept if tracker is not None else []}


class _StageTracker:
    """The events of the agents inside a stage, published live (tagged with the stage) and
    kept for the stage's durable result (``AGENT_EVENTS``), tokens excepted."""

    def __init__(self, runtime: _Runtime, workflow_id: str, stage_id: str) -> None:
        self.runtime, self.workflow_id, self.stage_id = runtime, workflow_id, stage_id
        self.kept: list[dict[str, Any]] = []

    def emit(self, event: Event) -> None:
        wire = event.to_dict()
        raw = {"id": uuid.uuid4().hex, **wire, "data": {**wire["data"], "stage_id": self.stage_id},
               "workflow_id": self.workflow_id}
        if not isinstance(event, LLMToken):
            self.kept.append(raw)
        self.runtime.send(self.workflow_id, raw)
