"""``ExecutionPlan``: a question broken into stages (seed 002 "Pipeline Data Models"), with
its checks: strict parsing (``plan_json.py``), validation of plans built in code, and
layering by ``depends_on`` (``graph.py``). The stage and result records are ``models.py``.
The plan calls the parser and the layering, which know only stages: the imports run one way.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from baton.pipeline.graph import layers
from baton.pipeline.models import STAGE_TOOLS, PlanStage
from baton.pipeline.plan_json import MAX_STAGES, check_plan, plan_from_data, plan_from_json


@dataclass
class ExecutionPlan:
    """A question broken into stages. ``depends_on`` is honoured by layer (``layers()``)."""

    question: str
    stages: list[PlanStage]

    def stage(self, stage_id: str) -> PlanStage:
        for stage in self.stages:
            if stage.stage_id == stage_id:
                return stage
        raise KeyError(stage_id)

    def validate(self, *, tools: Sequence[str] = STAGE_TOOLS, max_stages: int | None = None) -> None:
        """Raise ``PlanValidationError`` listing every problem, or ``PlanDefect`` on a cycle."""
        check_plan(self.question, self.stages, tools=tools, max_stages=max_stages or MAX_STAGES)

    def layers(self) -> list[list[PlanStage]]:
        """Kahn's algorithm over ``depends_on``: each list may run concurrently; stages keep
        plan order within a layer. Raises ``PlanDefect`` naming the stages of a cycle."""
        return layers(self.stages)

    def dependents(self, stage_id: str) -> list[PlanStage]:
        return [s for s in self.stages if stage_id in s.depends_on]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, raw: Any, *, tools: Sequence[str] = STAGE_TOOLS, max_stages: int | None = None) -> ExecutionPlan:
        question, stages = plan_from_data(raw, tools=tools, max_stages=max_stages or MAX_STAGES)
        return cls(question=question, stages=stages)

    @classmethod
    def from_json(cls, raw: str | bytes, *, tools: Sequence[str] = STAGE_TOOLS, max_stages: int | None = None) -> ExecutionPlan:
        """Parse and validate strictly: unknown fields, missing, malformed or duplicate ids,
        unknown dependencies or tools, wrong types and too many stages (``MAX_STAGES``
        unless ``max_stages`` says otherwise) all raise one ``PlanValidationError``."""
        question, stages = plan_from_json(raw, tools=tools, max_stages=max_stages or MAX_STAGES)
        return cls(question=question, stages=stages)
