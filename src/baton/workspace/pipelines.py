"""A workspace's pipelines, as surfaces see them: start, list, follow, decide.

Two implementations of one service (``start_run``, ``runs``, ``status``, ``events``,
``decide``):

- ``DurablePipelines``: runs on DBOS through the process's ``PipelineHost``. It is also the
  executor the workspace's planner uses (``start``/``resume``), so a multi-step question
  asked on any surface runs durably: ``start`` submits the plan and follows the run until it
  pauses at a checkpoint or ends, handing every event it hears (the stages' and the agents'
  inside them, from whichever process runs them) to the request's tracker. Runs of a
  workspace have ids that start with the workspace's prefix; any other id is "not found"
  for it, as it is for a run that does not exist.
- ``LocalPipelines``: the in-process executor (``PipelinePlanning`` with a
  ``PipelineExecutor``), for the Python API and tests: runs live in this process.

``events(id, after=seq)`` yields the run's events strictly in their sequence numbers
(``data.seq``, given by the worker, which stores each event before relaying it:
``baton.pipeline.durable.run_log``): it subscribes to live events first, reads the stored
backlog above ``after``, then goes on with live events, each one exactly once; a live event
that skips numbers (the bus lost some) sends it back to the log, which has them. So a reader
that attaches late, on another replica, or reconnects with the last number it saw gets the
run's sequence with no gap and no repeat. A takeover's replay is a new ``attempt`` numbered
after the old one's events. ``llm.token`` events are not numbered: shown live only, when
the reader is at the point they were said.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any

from baton.agents.failures import code_of
from baton.errors import BatonError
from baton.events import NULL_TRACKER, Event, LLMToken, PipelineStatus, QueueTracker, WorkflowTracker, read_event
from baton.pipeline import CheckpointDecision, CheckpointDecisionError, ExecutionPlan, PipelineRun, PipelineState
from baton.response import AIMessage

if TYPE_CHECKING:
    from baton.agents import AgentContext
    from baton.pipeline.durable import DurableStatus
    from baton.state.bus import Subscription
    from baton.workspace.pipeline_host import PipelineHost

POLL_S = 0.25
DONE = ("complete", "failed", "rejected")
PHASE_ENDS = ("stage.checkpoint", "pipeline.complete", "pipeline.status")
UNNUMBERED = ("llm.token",)  # as pipeline.durable.run_log: relayed live only, after event ``after_seq``


class PipelineNotFound(BatonError, LookupError):
    """No such run in the caller's workspace (it may exist in another: we don't say)."""


class PipelineWaitTimeout(BatonError, TimeoutError):
    """The run did not reach a checkpoint or its end in time; it goes on running."""


class DurablePipelines:
    def __init__(self, workspace: str, host: PipelineHost, *, wait_timeout_s: float = 600.0) -> None:
        self.workspace = workspace
        self.host = host
        self.planner: Any = None  # set by attach_planning: plans questions given to start_run
        self.wait_timeout_s = wait_timeout_s
        self.prefix = "p" + hashlib.sha256(workspace.encode()).hexdigest()[:10] + "-"

    # --- the executor interface (PipelinePlanning) ---------------------------------------------

    async def start(self, plan: ExecutionPlan, context: AgentContext) -> PipelineRun:
        """Submit ``plan`` and follow the run until it pauses or ends."""
        wid = self.new_id()
        with self.host.bus.subscribe(wid) as live:  # before the run can emit anything
            await self._submit(plan, context, wid)
            return await self._follow(wid, 0, context.tracker, live)

    async def resume(self, workflow_id: str, decision: CheckpointDecision, context: AgentContext) -> PipelineRun:
        status = await self._status(workflow_id)
        if context.workspace != self.workspace:
            raise CheckpointDecisionError(f"no pipeline is paused under workflow id {workflow_id!r} in workspace {context.workspace!r}")
        with self.host.bus.subscribe(workflow_id) as live:
            decision_id = await self._decide(workflow_id, decision, status)
            return await self._follow(workflow_id, status.phase, context.tracker, live, decision_id=decision_id)

    def paused(self, workflow_id: str) -> PipelineState | None:
        if not self.owns(workflow_id):
            return None
        try:
            status = self.host.client.status(workflow_id)
        except BatonError:
            return None
        return self.host.client.state(workflow_id) if status.status == "paused" else None

    # --- the service -----------------------------------------------------------------------------

    def new_id(self) -> str:
        return self.prefix + uuid.uuid4().hex

    def owns(self, workflow_id: str) -> bool:
        return isinstance(workflow_id, str) and workflow_id.startswith(self.prefix)

    async def start_run(self, context: AgentContext, *, plan: ExecutionPlan | None = None, question: str | None = None,
                        session_id: str | None = None) -> str:
        """Start a run of ``plan`` (or of the plan the workspace's planner makes for
        ``question``) without waiting; returns its id."""
        if plan is None:
            if self.planner is None or not question:
                raise CheckpointDecisionError("this workspace has no planner: give the plan itself")
            plan = await self.planner.plan(question, context.derive(extra={"_skip_complexity": True}))
        wid = self.new_id()
        await self._submit(plan, context.derive(extra={"_skip_complexity": True}), wid, session_id=session_id)
        return wid

    async def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        await self.host.ensure_started()
        found = await asyncio.to_thread(self.host.client.runs, self.prefix, limit=limit)
        return [_view(s) for s in found]

    async def status(self, workflow_id: str) -> dict[str, Any]:
        status = await self._status(workflow_id)
        view = _view(status)
        outcome = await asyncio.to_thread(self.host.client.outcome, workflow_id)
        view["outcome"] = outcome.to_dict() if outcome is not None else None
        return view

    async def decide(self, workflow_id: str, decision: CheckpointDecision, *, context: AgentContext | None = None,
                     wait: bool = True) -> AIMessage | None:
        """Send the decision; with ``wait``, follow the run to its next checkpoint or end and
        return that outcome. ``CheckpointDecisionError`` when it cannot apply."""
        status = await self._status(workflow_id)
        if not wait:
            await self._decide(workflow_id, decision, status)
            return None
        with self.host.bus.subscribe(workflow_id) as live:
            decision_id = await self._decide(workflow_id, decision, status)
            run = await self._follow(workflow_id, status.phase, context.tracker if context else NULL_TRACKER, live,
                                     decision_id=decision_id)
        return run.message

    async def events(self, workflow_id: str, *, after: int = 0) -> AsyncIterator[Event]:
        """The run's numbered events above ``after`` from its log, then live ones until it
        ends, strictly in ``seq`` order (module docstring)."""
        await self._status(workflow_id)
        client = self.host.client
        last = after
        with self.host.bus.subscribe(workflow_id) as live:  # before the backlog is read: nothing falls between
            backlog = await asyncio.to_thread(client.run_events, workflow_id, after=last)
            while True:
                for stored in backlog:
                    seq = _seq(stored)
                    if seq is not None and seq > last:
                        last = seq
                        yield read_event(stored)
                        if _final(stored):
                            return
                backlog = []
                raw = await live.get(timeout=1.0)
                if raw is None:  # silence: what the log holds (a run our bus does not reach), and whether it ended
                    backlog = await asyncio.to_thread(client.run_events, workflow_id, after=last)
                    if not backlog and (await asyncio.to_thread(client.status, workflow_id)).ended:
                        backlog = await asyncio.to_thread(client.run_events, workflow_id, after=last)
                        if not backlog:
                            for legacy in [] if last else await self._legacy_log(workflow_id):
                                yield legacy
                            return
                    continue
                seq = _seq(raw)
                if seq is None:  # a token: shown only where it was said, right after event ``after_seq``
                    if raw.get("type") in UNNUMBERED and raw.get("after_seq") == last:
                        yield read_event(raw)
                    continue
                if seq > last + 1:  # the bus lost some: they were stored before this one was relayed
                    backlog = await asyncio.to_thread(client.run_events, workflow_id, after=last)
                if seq == last + 1 or not any(_seq(b) == seq for b in backlog):
                    backlog.append(raw)

    async def _legacy_log(self, workflow_id: str) -> list[Event]:
        """A run of a worker that numbered nothing (an earlier version): its DBOS log."""
        logged, _, _ = await asyncio.to_thread(self.host.client.event_log, workflow_id)
        return [read_event(raw) for raw in logged]

    async def aclose(self) -> None:
        return None  # the host belongs to the process

    # --- inside ----------------------------------------------------------------------------------

    async def _status(self, workflow_id: str) -> DurableStatus:
        if not self.owns(workflow_id):
            raise PipelineNotFound(workflow_id)
        await self.host.ensure_started()
        try:
            return await asyncio.to_thread(self.host.client.status, workflow_id)
        except BatonError:
            raise PipelineNotFound(workflow_id) from None

    async def _submit(self, plan: ExecutionPlan, context: AgentContext, wid: str, *, session_id: str | None = None) -> None:
        await self.host.ensure_started()
        attributes = {"workspace": self.workspace, "question": plan.question or context.user_question, "session_id": session_id}
        await asyncio.to_thread(self.host.client.submit, plan, context.derive(workspace=self.workspace), workflow_id=wid,
                                attributes=attributes)

    async def _decide(self, workflow_id: str, decision: CheckpointDecision, status: DurableStatus) -> str:
        if status.status != "paused":
            raise PipelineNotFound(f"no paused pipeline {workflow_id} (it is {status.status or status.dbos_status})")
        return await asyncio.to_thread(self.host.client.decide, workflow_id, decision)

    async def _follow(self, wid: str, after_phase: int, tracker: WorkflowTracker | None, live: Subscription, *,
                      decision_id: str | None = None) -> PipelineRun:
        """Forward the run's events (``live``: a subscription taken before the run could
        emit) to ``tracker`` until it has advanced past ``after_phase`` to a checkpoint or its
        end; the outcome as a ``PipelineRun``."""
        client = self.host.client
        tracker = tracker or NULL_TRACKER
        seen: set[str | None] = set()
        deadline = time.monotonic() + self.wait_timeout_s
        look = True  # the state database is read when a phase may have ended, not per streamed token
        while True:
            if look:
                status = await asyncio.to_thread(client.status, wid)
                if decision_id is not None:
                    refused = await asyncio.to_thread(client.decision_error, wid, decision_id)
                    if refused:
                        raise CheckpointDecisionError(refused)
                if status.ended or (status.phase > after_phase and status.status in ("paused", *DONE)):
                    break
            if time.monotonic() > deadline:
                raise PipelineWaitTimeout(f"pipeline {wid} is still {status.status or status.dbos_status} after {self.wait_timeout_s:g} s")
            raw = await live.get(timeout=POLL_S)
            look = raw is None  # POLL_S of silence (a run our bus does not reach): look again
            while raw is not None:
                look = look or raw.get("type") in PHASE_ENDS
                _forward(tracker, raw, seen)
                raw = live.get_nowait()
        while (raw := live.get_nowait()) is not None:
            _forward(tracker, raw, seen)
        logged, _, _ = await asyncio.to_thread(client.event_log, wid)  # a run that ran where our bus does not reach
        for raw in logged:
            _forward(tracker, raw, seen)
        return await asyncio.to_thread(self._run_of, wid)

    def _run_of(self, wid: str) -> PipelineRun:
        client = self.host.client
        status = client.status(wid)
        if status.ended and status.dbos_status != "SUCCESS":
            from baton.pipeline.durable import PipelineRunFailedError

            raise PipelineRunFailedError(f"pipeline workflow {wid} ended {status.dbos_status}", status.dbos_status)
        outcome = client.outcome(wid)
        state = client.state(wid)
        return PipelineRun(wid, state, [outcome] if outcome is not None else [], status.status or "running", status.checkpoint_stage)  # type: ignore[arg-type]


def _seq(raw: dict[str, Any]) -> int | None:
    data = raw.get("data")
    seq = data.get("seq") if isinstance(data, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def _final(raw: dict[str, Any]) -> bool:
    """The run's last event: its status once it ended."""
    return raw.get("type") == "pipeline.status" and (raw.get("data") or {}).get("status") in DONE


def _forward(tracker: WorkflowTracker, raw: dict[str, Any], seen: set[str | None]) -> None:
    key = raw.get("id")
    if key in seen or raw.get("type") == "pipeline.status":
        return
    seen.add(key)
    tracker.emit(read_event(raw))


def _view(status: DurableStatus) -> dict[str, Any]:
    attributes = status.attributes or {}
    return {"workflow_id": status.workflow_id, "status": status.status or status.dbos_status.lower(),
            "run_status": status.dbos_status, "checkpoint_stage": status.checkpoint_stage, "phase": status.phase,
            "question": attributes.get("question"), "session_id": attributes.get("session_id"),
            "created_at": status.created_at, "executor_id": status.executor_id}


class LocalPipelines:
    """The same service over an in-process ``PipelinePlanning`` (runs live in this process)."""

    def __init__(self, planning: Any) -> None:
        self.planning = planning
        self._runs: dict[str, dict[str, Any]] = {}
        self._events: dict[str, list[Event]] = {}
        self._waiters: dict[str, list[QueueTracker]] = {}

    def owns(self, workflow_id: str) -> bool:
        return workflow_id in self._runs or self.planning.is_paused(workflow_id)

    async def start_run(self, context: AgentContext, *, plan: ExecutionPlan | None = None, question: str | None = None,
                        session_id: str | None = None) -> str:
        context = context.derive(extra={"_skip_complexity": True}, tracker=_Recorder(self, context.workflow_id))
        if plan is None:
            plan = await self.planning.planner.plan(question or "", context)
        wid = context.workflow_id
        self._runs[wid] = {"workflow_id": wid, "status": "running", "question": plan.question or question,
                           "session_id": session_id, "created_at": int(time.time() * 1000), "outcome": None}
        asyncio.ensure_future(self._run(self.planning.executor.start(plan, context), wid))
        return wid

    async def _run(self, work: Awaitable[PipelineRun], wid: str) -> None:
        try:
            run = await work
            self._runs[wid].update(status=run.status, checkpoint_stage=run.checkpoint_stage, outcome=run.message.to_dict())
        except Exception as exc:  # the run's failure is its status
            self._runs[wid].update(status="failed", outcome=AIMessage.failed(code_of(exc), str(exc)).to_dict())
        self._publish(wid, PipelineStatus(status=self._runs[wid]["status"], workflow_id=wid))

    def _publish(self, wid: str, event: Event) -> None:
        kept = self._events.setdefault(wid, [])
        if not isinstance(event, LLMToken):  # numbered as a durable run's are (tokens: live only)
            event = dataclasses.replace(event, extra={**event.extra, "seq": len(kept) + 1, "attempt": 1})
            kept.append(event)
        for waiter in self._waiters.get(wid, ()):
            waiter.emit(event)

    async def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        return sorted((dict(r, outcome=None) for r in self._runs.values()), key=lambda r: -r["created_at"])[:limit]

    async def status(self, workflow_id: str) -> dict[str, Any]:
        if workflow_id not in self._runs:
            if not self.planning.is_paused(workflow_id):
                raise PipelineNotFound(workflow_id)
            return {"workflow_id": workflow_id, "status": "paused", "outcome": None}
        return dict(self._runs[workflow_id])

    async def decide(self, workflow_id: str, decision: CheckpointDecision, *, context: AgentContext, wait: bool = True) -> AIMessage | None:
        if not self.planning.is_paused(workflow_id):
            raise PipelineNotFound(workflow_id)
        work = self.planning.decide(workflow_id, decision, context.derive(tracker=_Recorder(self, workflow_id, context.tracker)))
        if not wait:
            self._runs.setdefault(workflow_id, {"workflow_id": workflow_id, "created_at": int(time.time() * 1000), "outcome": None})
            asyncio.ensure_future(self._run(work, workflow_id))
            return None
        message: AIMessage = await work
        if workflow_id in self._runs:
            self._runs[workflow_id].update(status=(message.meta.get("pipeline") or {}).get("status"), outcome=message.to_dict())
        return message

    async def events(self, workflow_id: str, *, after: int = 0) -> AsyncIterator[Event]:
        await self.status(workflow_id)
        waiter = QueueTracker()
        self._waiters.setdefault(workflow_id, []).append(waiter)
        event: Event | None
        try:
            for event in list(self._events.get(workflow_id, ()))[after:]:
                yield event
            if self._runs.get(workflow_id, {}).get("status") in (*DONE, "paused"):
                return
            while True:
                event = await waiter.queue.get()
                if event is None or isinstance(event, PipelineStatus):
                    return
                if event.extra.get("seq", after + 1) > after:  # a token has none: live only
                    yield event
        finally:
            self._waiters[workflow_id].remove(waiter)

    async def aclose(self) -> None:
        return None


class _Recorder:
    """Keeps a local run's events for ``events()`` and passes them on."""

    def __init__(self, pipelines: LocalPipelines, workflow_id: str, forward: Any = None) -> None:
        self.pipelines, self.workflow_id, self.forward = pipelines, workflow_id, forward

    def emit(self, event: Event) -> None:
        self.pipelines._publish(self.workflow_id, event)
        if self.forward is not None:
            self.forward.emit(event)


def as_service(pipelines: Any) -> Any:
    """What a ``Workspace`` holds: a service as is, an in-process ``PipelinePlanning``
    wrapped in ``LocalPipelines``."""
    if pipelines is None or hasattr(pipelines, "start_run"):
        return pipelines
    if hasattr(pipelines, "run_plan") and hasattr(pipelines, "executor"):
        return LocalPipelines(pipelines)
    return pipelines
