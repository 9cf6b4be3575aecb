"""In-process execution: the default executor, for tests, notebooks and a single server.

``PipelineExecutor.start(plan, context)`` runs the plan layer by layer, every stage of a
layer concurrently (``asyncio.gather``), and returns a ``PipelineRun``. When a checkpoint
stage finishes, the run *returns* paused (``run.status == "paused"``, ``run.message`` is the
``stage_checkpoint`` answer) instead of blocking a coroutine on the user: the paused state
is kept in the executor's ``RunStore`` under the run's ``workflow_id`` (the request's
``context.workflow_id``), and ``resume(workflow_id, decision, context)`` takes it out (so two
concurrent decisions cannot both apply), applies the decision and carries on. The default
store is in memory, so a paused run lives at most as long as the process; for pauses that
must survive a restart use the durable executor (``baton.pipeline.durable``). States are
plain data (``PipelineState.to_dict``), so a store backed by anything else is a few lines.

The in-memory store is bounded, because a paused run nobody answers would otherwise be kept
forever (a server would grow with every abandoned checkpoint): a paused run is kept for
``ttl_s`` (default 24 hours) and at most ``max_runs`` (default 1000) are kept, the oldest
pause dropped first to make room. A decision for a dropped run gets the same clear
``CheckpointDecisionError`` as one for an unknown id. Expiry is checked when the store is
used, so no timer or thread is involved.

What a resume runs with. The stages after a checkpoint belong to the request that started
the run, not to the one carrying the decision (on the server a bare context naming only the
workspace). So a paused run is kept with its context (``PausedRun``), minus per-request
plumbing: the tracker (a finished request's event stream) and the execution memory (a
finished request's record of agent calls) are dropped. Everything else carries over: the
user's question, project, workspace, user id, chat history, model (``llm_router``,
``model``, ``preferred_provider``) and ``extra`` flags. On resume the
stages' context is the kept one with the decision request's ``tracker`` and
``execution_memory`` (where *this* request's events and agent calls go) and the paused
run's ``workflow_id``; any other field of the decision's context is ignored. A decision
whose ``workspace`` differs from the kept one is refused (``CheckpointDecisionError``, the
run stays paused), whatever store the caller shares between workspaces.

A resume that does not finish is not a lost run. If it is cancelled (a client that
disconnected) or fails unexpectedly, the run is put back exactly as it was paused, the
decision not applied, so a later decision continues from the same checkpoint; stages the
interrupted resume had already finished run again then (stages are read-only, see
``runners``). It is put back only if nothing was paused under its id meanwhile.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from baton.events import NULL_TRACKER, StageStart
from baton.pipeline.engine import StageDone, advance
from baton.pipeline.errors import CheckpointDecisionError, PipelineConfigurationError, PipelineError
from baton.pipeline.models import PlanStage, StageResult
from baton.pipeline.plan import ExecutionPlan
from baton.pipeline.runners import StageRunner
from baton.pipeline.state import CheckpointDecision, PipelineState, RunStatus
from baton.response import AIMessage

if TYPE_CHECKING:
    from baton.agents import AgentContext


@dataclass
class PipelineRun:
    """Where a run stood when ``start``/``resume`` returned (``status`` and
    ``checkpoint_stage`` are that moment's; ``state`` is the live state a later ``resume``
    continues). ``messages`` are the outcomes this call produced (each ``stage_failed``,
    then the checkpoint or the final answer); ``message`` is the last of them."""

    workflow_id: str
    state: PipelineState
    messages: list[AIMessage] = field(default_factory=list)
    status: RunStatus = "running"
    checkpoint_stage: str | None = None

    @property
    def message(self) -> AIMessage:
        return self.messages[-1]

    @property
    def results(self) -> dict[str, StageResult]:
        return self.state.results


@dataclass
class PausedRun:
    """A run waiting for a decision: its state and the context its remaining stages run
    with (the starting request's, without tracker and execution memory)."""

    state: PipelineState
    context: AgentContext


class RunStore(Protocol):
    """Keeps paused runs between a checkpoint and its decision."""

    def save(self, workflow_id: str, paused: PausedRun) -> None: ...
    def take(self, workflow_id: str) -> PausedRun | None: ...
    def peek(self, workflow_id: str) -> PausedRun | None: ...


class InMemoryRunStore:
    """Paused runs of this process, bounded by age (``ttl_s``) and number (``max_runs``);
    see the module docstring. ``clock`` is a monotonic clock in seconds."""

    def __init__(self, *, max_runs: int = 1000, ttl_s: float = 24 * 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        if max_runs < 1 or ttl_s <= 0:
            raise PipelineConfigurationError("InMemoryRunStore needs max_runs >= 1 and ttl_s > 0")
        self.max_runs = max_runs
        self.ttl_s = ttl_s
        self._clock = clock
        self._states: OrderedDict[str, tuple[float, PausedRun]] = OrderedDict()  # oldest pause first

    def save(self, workflow_id: str, paused: PausedRun) -> None:
        self._expire()
        self._states.pop(workflow_id, None)
        self._states[workflow_id] = (self._clock(), paused)
        while len(self._states) > self.max_runs:
            self._states.popitem(last=False)

    def take(self, workflow_id: str) -> PausedRun | None:
        self._expire()
        entry = self._states.pop(workflow_id, None)
        return None if entry is None else entry[1]

    def peek(self, workflow_id: str) -> PausedRun | None:
        self._expire()
        entry = self._states.get(workflow_id)
        return None if entry is None else entry[1]

    def __len__(self) -> int:
        self._expire()
        return len(self._states)

    def _expire(self) -> None:
        cutoff = self._clock() - self.ttl_s
        while self._states:
            saved_at = next(iter(self._states.values()))[0]
            if saved_at > cutoff:
                break
            self._states.popitem(last=False)


class PipelineExecutor:
    """Runs plans with a ``StageRunner``; ``units`` are known column units for the
    convergence check (e.g. ``{"revenue_cents": "cents"}``)."""

    def __init__(self, runner: StageRunner, *, units: Mapping[str, str] | None = None, store: RunStore | None = None) -> None:
        self.runner = runner
        self.units = dict(units or {})
        self.store: RunStore = store if store is not None else InMemoryRunStore()

    async def start(self, plan: ExecutionPlan, context: AgentContext) -> PipelineRun:
        """Validate ``plan`` (``PlanValidationError``/``PlanDefect`` before anything runs)
        and run it until it completes or pauses. A run paused under the same workflow id is
        never replaced silently: that is a ``PipelineError`` (give each request its own id)."""
        if self.store.peek(context.workflow_id) is not None:
            raise PipelineError(f"a pipeline is already paused under workflow id {context.workflow_id!r}; decide it first or use a new id")
        state = PipelineState.start(plan)
        return await self._advance(state, context)

    async def resume(self, workflow_id: str, decision: CheckpointDecision, context: AgentContext) -> PipelineRun:
        """Apply the user's decision to the run paused under ``workflow_id`` and continue.
        The stages run with the paused run's own context; ``context`` (the decision's
        request) gives only its tracker and execution memory, and must name the same
        workspace (see the module docstring)."""
        paused = self.store.take(workflow_id)
        if paused is None:
            raise CheckpointDecisionError(
                f"no pipeline is paused under workflow id {workflow_id!r} (it finished, never paused, or its pause expired)"
            )
        if context.workspace != paused.context.workspace:
            self.store.save(workflow_id, paused)  # not this workspace's run: leave it as it was
            raise CheckpointDecisionError(f"no pipeline is paused under workflow id {workflow_id!r} in workspace {context.workspace!r}")
        before = paused.state.snapshot()
        try:
            paused.state.apply(decision)
        except CheckpointDecisionError:
            self.store.save(workflow_id, PausedRun(before, paused.context))  # a bad decision loses nothing
            raise
        stages_context = paused.context.derive(
            workflow_id=workflow_id, tracker=context.tracker, execution_memory=context.execution_memory
        )
        try:
            return await self._advance(paused.state, stages_context)
        except BaseException:
            # cancelled (client gone) or a bug: put the run back as it was paused
            if self.store.peek(workflow_id) is None:
                self.store.save(workflow_id, PausedRun(before, paused.context))
            raise

    def paused(self, workflow_id: str) -> PipelineState | None:
        paused = self.store.peek(workflow_id)
        return None if paused is None else paused.state

    async def _advance(self, state: PipelineState, context: AgentContext) -> PipelineRun:
        async def run_layer(stages: list[PlanStage], done: StageDone) -> None:
            await asyncio.gather(*(self._run_stage(stage, state, context, done) for stage in stages))

        messages = await advance(state, context.workflow_id, run_layer, context.emit, units=self.units)
        if state.status == "paused":
            self.store.save(context.workflow_id, PausedRun(state, _kept(context)))
        return PipelineRun(context.workflow_id, state, messages, state.status, state.checkpoint_stage)

    async def _run_stage(self, stage: PlanStage, state: PipelineState, context: AgentContext, done: StageDone) -> None:
        context.emit(StageStart(stage_id=stage.stage_id, tool=stage.tool, question=stage.question))
        started = time.time()
        try:
            result = await self.runner.run(stage, state.inputs_for(stage), context)
        except Exception as exc:  # a runner bug fails its stage, not the whole run
            result = StageResult(stage_id=stage.stage_id, status="error", error=f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__)
        if result.started_at is None:
            result.started_at = started
        if result.finished_at is None:
            result.finished_at = time.time()
            result.duration_ms = round((result.finished_at - started) * 1000, 3)
        done(stage, result)


def _kept(context: AgentContext) -> AgentContext:
    """What of a request's context a paused run keeps: all but its per-request plumbing."""
    return dataclasses.replace(context, tracker=NULL_TRACKER, execution_memory=None)
