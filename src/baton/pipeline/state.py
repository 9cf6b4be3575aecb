"""The pipeline as a state machine: where a run is, what comes next, what a decision does.

Both executors drive the same ``PipelineState``: the in-process one keeps a paused state in
memory between calls, the durable one replays it inside a DBOS workflow. It is plain data
(``to_dict``/``from_dict``), and every transition is deterministic given the stage results,
which is what lets a durable workflow re-derive it after a crash.

Rules it encodes:
- stages run by layer (``ExecutionPlan.layers()``);
- a stage whose dependency did not succeed is ``skipped`` (``error_type="dependency"``);
- a stage consuming two or more tables passes the convergence check first, else it fails
  (``error_type="convergence"``);
- a successful stage is then held to its ``StageValidation`` (``error_type="validation"``);
- a failed stage does not stop independent branches: they run to the end;
- after a layer, each successful ``checkpoint=True`` stage of it (plan order) waits for a
  decision: ``approve`` continues, ``edit`` replaces the question of a stage that has not run
  yet and continues, ``reject`` skips everything not run (``error_type="rejected"``) and ends.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from baton.pipeline.checks import validation_problems
from baton.pipeline.convergence import convergence_problems
from baton.pipeline.errors import CheckpointDecisionError
from baton.pipeline.models import PlanStage, StageResult
from baton.pipeline.plan import ExecutionPlan

RunStatus = Literal["running", "paused", "complete", "failed", "rejected"]


@dataclass(frozen=True)
class CheckpointDecision:
    """The user's answer to a ``stage_checkpoint``.

    ``action`` is ``approve``, ``edit`` or ``reject``. ``edit`` needs ``question``; it goes to
    ``target_stage`` when given, else to the checkpointed stage's only dependent, else to the
    next stage in plan order that has not run. ``stage_id`` optionally names the checkpoint
    being answered, so a stale decision cannot answer a later checkpoint.
    """

    action: Literal["approve", "edit", "reject"]
    question: str | None = None
    target_stage: str | None = None
    stage_id: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.action not in ("approve", "edit", "reject"):
            raise CheckpointDecisionError(f"unknown checkpoint action {self.action!r} (use approve, edit or reject)")
        if self.action == "edit" and not (self.question or "").strip():
            raise CheckpointDecisionError("an 'edit' decision needs the new question")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CheckpointDecision:
        if not isinstance(raw, Mapping):
            raise CheckpointDecisionError(f"a checkpoint decision must be an object, got {type(raw).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(raw) - known
        if unknown:
            raise CheckpointDecisionError(f"unknown checkpoint decision field(s): {', '.join(sorted(unknown))}")
        if "action" not in raw:
            raise CheckpointDecisionError("a checkpoint decision needs an 'action'")
        return cls(**dict(raw))


@dataclass
class PipelineState:
    plan: ExecutionPlan
    layer_ids: list[list[str]]
    next_layer: int = 0
    results: dict[str, StageResult] = field(default_factory=dict)
    awaiting: list[str] = field(default_factory=list)
    status: RunStatus = "running"
    decisions: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def start(cls, plan: ExecutionPlan) -> PipelineState:
        """A new run of ``plan``. The run owns a copy: an ``edit`` decision rewrites a
        question, and must not reach the caller's plan or another run of it."""
        plan.validate()
        plan = copy.deepcopy(plan)
        return cls(plan=plan, layer_ids=[[s.stage_id for s in layer] for layer in plan.layers()])

    @property
    def done(self) -> bool:
        return self.status in ("complete", "failed", "rejected")

    @property
    def checkpoint_stage(self) -> str | None:
        return self.awaiting[0] if self.awaiting else None

    # --- layers --------------------------------------------------------------------------

    def begin_layer(self, units: Mapping[str, str] | None = None) -> tuple[list[PlanStage], list[StageResult]]:
        """The stages of the next layer that may run, and those that may not (already
        recorded as skipped or failed by the convergence check)."""
        runnable: list[PlanStage] = []
        blocked: list[StageResult] = []
        for sid in self.layer_ids[self.next_layer]:
            stage = self.plan.stage(sid)
            bad = [d for d in stage.depends_on if not self.results[d].ok]
            if bad:
                reason = ", ".join(f"{d!r} ({self.results[d].status})" for d in bad)
                blocked.append(self._store(_closed(stage, "skipped", f"skipped: depends on {reason}", "dependency")))
                continue
            problems = convergence_problems(stage, self.inputs_for(stage), units=units)
            if problems:
                blocked.append(self._store(_closed(stage, "error", "convergence check failed: " + "; ".join(problems), "convergence")))
                continue
            runnable.append(stage)
        return runnable, blocked

    def inputs_for(self, stage: PlanStage) -> dict[str, StageResult]:
        return {d: self.results[d] for d in stage.depends_on if d in self.results}

    def record(self, stage: PlanStage, result: StageResult) -> StageResult:
        """Store a stage's result after holding it to the stage's validation."""
        result.stage_id = stage.stage_id
        result.tool = result.tool or stage.tool
        result.question = result.question or stage.question
        problems = validation_problems(stage, result)
        if problems:
            result.status = "error"
            result.error = "validation failed: " + "; ".join(problems)
            result.error_type = "validation"
        return self._store(result)

    def end_layer(self) -> None:
        layer = self.layer_ids[self.next_layer]
        self.next_layer += 1
        self.awaiting = [sid for sid in layer if self.plan.stage(sid).checkpoint and self.results[sid].ok]
        self._settle()

    # --- checkpoints ---------------------------------------------------------------------

    def apply(self, decision: CheckpointDecision) -> None:
        if not self.awaiting:
            raise CheckpointDecisionError(f"the pipeline is {self.status}, not waiting at a checkpoint")
        current = self.awaiting[0]
        if decision.stage_id is not None and decision.stage_id != current:
            raise CheckpointDecisionError(f"the pipeline waits at checkpoint {current!r}, not {decision.stage_id!r}")
        if decision.action == "edit":
            target = self._edit_target(current, decision.target_stage)
            stage = self.plan.stage(target)
            stage.question = decision.question or stage.question
        self.decisions.append({**decision.to_dict(), "stage_id": current, "at": time.time()})
        self.awaiting.pop(0)
        if decision.action == "reject":
            self.awaiting.clear()
            why = f"rejected at checkpoint {current!r}" + (f": {decision.reason}" if decision.reason else "")
            for stage in self.plan.stages:
                if stage.stage_id not in self.results:
                    self._store(_closed(stage, "skipped", why, "rejected"))
            self.status = "rejected"
            return
        self._settle()

    def _edit_target(self, current: str, wanted: str | None) -> str:
        pending = [s.stage_id for s in self.plan.stages if s.stage_id not in self.results]
        if wanted is not None:
            if wanted not in {s.stage_id for s in self.plan.stages}:
                raise CheckpointDecisionError(f"cannot edit unknown stage {wanted!r}")
            if wanted not in pending:
                raise CheckpointDecisionError(f"cannot edit stage {wanted!r}: it already ran")
            return wanted
        dependents = [s.stage_id for s in self.plan.dependents(current) if s.stage_id in pending]
        if len(dependents) == 1:
            return dependents[0]
        if dependents:
            raise CheckpointDecisionError(
                f"stage {current!r} has several dependents ({', '.join(dependents)}): name the one to edit in target_stage"
            )
        if pending:
            return pending[0]
        raise CheckpointDecisionError("there is no stage left to edit")

    # --- outcome -------------------------------------------------------------------------

    def _settle(self) -> None:
        if self.awaiting:
            self.status = "paused"
        elif self.next_layer >= len(self.layer_ids):
            self.status = "failed" if any(r.status == "error" for r in self.results.values()) else "complete"
        else:
            self.status = "running"

    def ordered_results(self) -> list[StageResult]:
        return [self.results[s.stage_id] for s in self.plan.stages if s.stage_id in self.results]

    def _store(self, result: StageResult) -> StageResult:
        self.results[result.stage_id] = result
        return result

    def snapshot(self) -> PipelineState:
        """A copy to go back to if a resume does not finish: its own plan (an ``edit``
        rewrites a question), lists and results dict. Recorded stage results are shared:
        nothing changes a result once it is recorded."""
        return dataclasses.replace(
            self, plan=copy.deepcopy(self.plan), layer_ids=[list(layer) for layer in self.layer_ids],
            results=dict(self.results), awaiting=list(self.awaiting), decisions=list(self.decisions),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "layer_ids": self.layer_ids,
            "next_layer": self.next_layer,
            "results": {sid: r.to_dict() for sid, r in self.results.items()},
            "awaiting": list(self.awaiting),
            "status": self.status,
            "decisions": list(self.decisions),
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PipelineState:
        return cls(
            plan=ExecutionPlan.from_dict(raw["plan"]),
            layer_ids=[list(layer) for layer in raw["layer_ids"]],
            next_layer=raw["next_layer"],
            results={sid: StageResult.from_dict(r) for sid, r in raw["results"].items()},
            awaiting=list(raw["awaiting"]),
            status=raw["status"],
            decisions=list(raw["decisions"]),
        )


def _closed(stage: PlanStage, status: str, error: str, error_type: str) -> StageResult:
    now = time.time()
    return StageResult(
        stage_id=stage.stage_id, tool=stage.tool, question=stage.question, status=status,  # type: ignore[arg-type]
        error=error, error_type=error_type, started_at=now, finished_at=now,
    )
