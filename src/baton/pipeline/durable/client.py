"""The producer side: submit pipelines, answer checkpoints, read progress and results.

``PipelineClient`` talks only to the system database (through ``DBOSClient``), so the HTTP
API, a CLI or a notebook can use it without running workflows (a process that launched DBOS
would also consume the queue). Everything crosses as JSON: plans, decisions, stage results,
outcome AIMessages.

Note: the DBOS client does not create the system database; a worker must have started once
against it (the first ``PipelineWorker.start()`` creates and migrates it).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baton.events import Event, read_event
from baton.pipeline.durable.config import DurableConfig
from baton.pipeline.durable.run_log import RunLog
from baton.pipeline.durable.workflow import DECISION_TOPIC, EVENTS_STREAM, WORKFLOW_NAME, decision_envelope
from baton.pipeline.errors import CheckpointDecisionError, PipelineError
from baton.pipeline.models import StageResult
from baton.pipeline.plan import ExecutionPlan
from baton.pipeline.state import CheckpointDecision, PipelineState
from baton.response import AIMessage, to_jsonable

if TYPE_CHECKING:
    from dbos import EnqueueOptions

    from baton.agents import AgentContext


class PipelineTimeoutError(PipelineError):
    """A durable pipeline did not reach the awaited state in time (it keeps running)."""


class PipelineRunFailedError(PipelineError):
    """The workflow itself ended in error or was cancelled (not a failed stage: those are
    results). ``status`` is the DBOS status."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class DurableStatus:
    workflow_id: str
    dbos_status: str  # ENQUEUED | PENDING | SUCCESS | ERROR | CANCELLED | ...
    status: str | None  # the pipeline's: running | paused | complete | failed | rejected (None before the first layer)
    checkpoint_stage: str | None
    executor_id: str | None
    phase: int = 0  # how many times the run advanced (to a checkpoint or the end)
    decided: str | None = None  # the id of the last decision applied
    attributes: dict[str, Any] | None = None
    created_at: int | None = None  # epoch milliseconds

    @property
    def ended(self) -> bool:
        return self.dbos_status in ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


@dataclass
class DurableResult:
    workflow_id: str
    status: str
    state: PipelineState
    messages: list[AIMessage]

    @property
    def message(self) -> AIMessage:
        return self.messages[-1]

    @property
    def results(self) -> dict[str, StageResult]:
        return self.state.results


class PipelineClient:
    def __init__(self, config: DurableConfig) -> None:
        from dbos import DBOSClient

        self.config = config
        self._client = DBOSClient(
            system_database_url=config.system_database_url,
            application_name=config.app_name,
            dbos_system_schema=config.dbos_system_schema,
        )
        self._run_log: RunLog | None = None

    def close(self) -> None:
        self._client.destroy()
        if self._run_log is not None:
            self._run_log.close()

    def __enter__(self) -> PipelineClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, plan: ExecutionPlan, context: AgentContext | None = None, *, workflow_id: str | None = None,
               attributes: dict[str, Any] | None = None) -> str:
        """Validate ``plan`` and enqueue it; returns the workflow id (``workflow_id``, else the
        context's, else a new one). Submitting the same id twice attaches to the first run.
        ``attributes`` (JSON) are kept with the run and returned by ``status``/``runs``."""
        plan.validate()
        request = _request(plan, context)
        wid = workflow_id or (context.workflow_id if context is not None else uuid.uuid4().hex)
        options: EnqueueOptions = {"workflow_name": WORKFLOW_NAME, "queue_name": self.config.queue_name, "workflow_id": wid,
                                   "app_version": self.config.application_version}
        if attributes:
            options["attributes"] = attributes
        self._client.enqueue(options, plan.to_dict(), request, dict(self.config.units))
        return wid

    def decide(self, workflow_id: str, decision: CheckpointDecision) -> str:
        """Send the decision for the run's checkpoint. It is stored durably, so it may be sent
        while no worker runs; the workflow applies it when it waits (or resumes waiting).

        Decisions queue up on the workflow, so one that names no ``stage_id`` is addressed
        here to the checkpoint the run waits at now: a repeated or late decision is then
        refused at a later checkpoint instead of answering it. With no checkpoint waiting, a
        decision must name the ``stage_id`` it answers (``CheckpointDecisionError``)."""
        if decision.stage_id is None:
            current = self.status(workflow_id)
            if current.status != "paused" or current.checkpoint_stage is None:
                raise CheckpointDecisionError(
                    f"pipeline {workflow_id} is not waiting at a checkpoint ({current.status or current.dbos_status}); "
                    "name the checkpoint's stage_id to answer one ahead"
                )
            decision = dataclasses.replace(decision, stage_id=current.checkpoint_stage)
        decision_id = uuid.uuid4().hex
        self._client.send(workflow_id, decision_envelope(decision, decision_id), DECISION_TOPIC)
        return decision_id

    def status(self, workflow_id: str) -> DurableStatus:
        """Where the run is (``PipelineError`` for an unknown id)."""
        found = self._client.list_workflows(workflow_ids=[workflow_id], load_input=False, load_output=False)
        if not found:
            raise PipelineError(f"no pipeline run {workflow_id!r}")
        return self._status(found[0])

    def _status(self, info: Any) -> DurableStatus:
        progress = self._client.get_event(info.workflow_id, "status", timeout_seconds=0) or {}
        return DurableStatus(info.workflow_id, str(info.status), progress.get("status"), progress.get("checkpoint_stage"),
                             info.executor_id, int(progress.get("phase") or 0), progress.get("decided"),
                             getattr(info, "attributes", None), getattr(info, "created_at", None))

    def runs(self, prefix: str = "", *, limit: int = 50) -> list[DurableStatus]:
        """The latest runs whose workflow id starts with ``prefix``, newest first."""
        found = self._client.list_workflows(name=WORKFLOW_NAME, workflow_id_prefix=prefix or None, sort_desc=True, limit=limit,
                                            load_input=False, load_output=False)
        return [self._status(info) for info in found]

    def wait_for(self, workflow_id: str, statuses: tuple[str, ...], *, timeout_s: float, poll_s: float = 0.1) -> DurableStatus:
        """Poll until the pipeline status is one of ``statuses`` (or the run ends)."""
        deadline = time.monotonic() + timeout_s
        while True:
            current = self.status(workflow_id)
            if current.status in statuses or current.dbos_status in ("SUCCESS", "ERROR", "CANCELLED"):
                return current
            if time.monotonic() >= deadline:
                raise PipelineTimeoutError(f"pipeline {workflow_id} is still {current.status or current.dbos_status} after {timeout_s:g} s")
            time.sleep(poll_s)

    def outcome(self, workflow_id: str) -> AIMessage | None:
        """The latest outcome message (checkpoint, failure or final), if any yet."""
        raw = self._client.get_event(workflow_id, "outcome", timeout_seconds=0)
        return None if raw is None else AIMessage.from_dict(raw)

    def state(self, workflow_id: str) -> PipelineState | None:
        """The run's ``PipelineState`` after its latest phase, if it has run one."""
        raw = self._client.get_event(workflow_id, "state", timeout_seconds=0)
        return None if raw is None else PipelineState.from_dict(raw)

    def decision_error(self, workflow_id: str, decision_id: str | None = None) -> str | None:
        """Why the last decision (or the one with ``decision_id``) was refused, if it was."""
        raw = self._client.get_event(workflow_id, "decision_error", timeout_seconds=0)
        if raw is None or (decision_id is not None and raw.get("id") != decision_id):
            return None
        return raw["error"]

    def result(self, workflow_id: str, *, timeout_s: float = 60.0, poll_s: float = 0.1) -> DurableResult:
        """Wait for the run to end and return every stage's result and the outcome messages."""
        current = self.wait_for(workflow_id, (), timeout_s=timeout_s, poll_s=poll_s)
        if current.dbos_status != "SUCCESS":
            raise PipelineRunFailedError(f"pipeline workflow {workflow_id} ended {current.dbos_status}", current.dbos_status)
        raw: dict[str, Any] = self._client.retrieve_workflow(workflow_id).get_result()
        return DurableResult(workflow_id, raw["status"], PipelineState.from_dict(raw["state"]), [AIMessage.from_dict(m) for m in raw["messages"]])

    def events(self, workflow_id: str, *, timeout_s: float | None = None) -> Iterator[Event]:
        """The run's tracker events (``stage.start`` ... ``pipeline.complete``), written in one
        batch per phase (up to a checkpoint, then up to the end); ends when the run ends."""
        for batch in self._client.read_stream(workflow_id, EVENTS_STREAM, timeout_seconds=timeout_s):
            for raw in batch:
                yield read_event(raw)

    def event_log(self, workflow_id: str, *, offset: int = 0) -> tuple[list[dict[str, Any]], int, bool]:
        """What the run's durable event log holds now, without waiting: (events as dicts,
        the offset to read from next time, whether the log is closed)."""
        from dbos._error import DBOSStreamTimeoutError

        events: list[dict[str, Any]] = []
        try:
            for batch in self._client.read_stream(workflow_id, EVENTS_STREAM, offset=offset, timeout_seconds=0.001,
                                                  polling_interval_sec=0.001):
                events.extend(batch)
                offset += 1
        except DBOSStreamTimeoutError:  # nothing more written yet
            return events, offset, False
        return events, offset, True


    def run_events(self, workflow_id: str, *, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """The run's numbered events above ``after`` (``data.seq``), in order, as they are
        stored now (``run_log.py``): the backlog a late or reconnecting reader starts from."""
        if self._run_log is None:
            self._run_log = RunLog(self.config.sqlalchemy_url(), self.config.system_schema)
        return self._run_log.read(workflow_id, after=after, limit=limit)


def _request(plan: ExecutionPlan, context: AgentContext | None) -> dict[str, Any]:
    if context is None:
        return {"question": plan.question}
    extra = {}
    for key, value in context.extra.items():
        try:
            extra[key] = to_jsonable(value)
        except TypeError:
            continue  # per-process objects (callbacks, connections) cannot cross to a worker
    return {"question": context.user_question or plan.question, "project_id": context.project_id,
            "workspace": context.workspace, "user_id": context.user_id, "extra": extra,
            "model": context.model, "preferred_provider": context.preferred_provider,
            "chat_history": [{"role": m.role, "content": m.content} for m in context.chat_history if m.content]}
