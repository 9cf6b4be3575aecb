"""``PipelinePlanning``: what lets an orchestrator answer a multi-step question with a plan.

``OrchestratorAgent(planning=PipelinePlanning(planner, executor))`` asks ``needs_plan``
first (a cheap check the request skips with ``extra["_skip_complexity"]``); when it says
yes, the planner writes an ``ExecutionPlan`` and the executor runs it layer by layer. The
stages' own requests carry ``_skip_complexity`` so a stage routed back through the
orchestrator never plans again. An invalid plan, after its one repair round, is a clear
``response_type="error"`` answer naming the problems.

The orchestrator only sees this small interface (``needs_plan``, ``run_plan``), so the
agents layer never imports the pipeline layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.pipeline.errors import PlanDefect, PlanValidationError
from baton.pipeline.executor import PipelineExecutor
from baton.pipeline.planner import Planner
from baton.pipeline.state import CheckpointDecision
from baton.response import AIMessage

if TYPE_CHECKING:
    from baton.agents import AgentContext

SKIP = {"_skip_complexity": True}


class PipelinePlanning:
    def __init__(self, planner: Planner, executor: PipelineExecutor) -> None:
        self.planner = planner
        self.executor = executor

    def needs_plan(self, question: str, context: AgentContext) -> bool:
        return self.planner.needs_plan(question, context)

    async def run_plan(self, question: str, context: AgentContext) -> AIMessage:
        """Plan ``question`` and run the plan until it completes, fails or pauses."""
        staged = context.derive(extra=SKIP)
        try:
            plan = await self.planner.plan(question, staged)
            run = await self.executor.start(plan, staged)
        except (PlanValidationError, PlanDefect) as exc:
            problems = getattr(exc, "problems", None) or [str(exc)]
            return AIMessage.failed(
                "invalid_plan", str(exc), "I could not build a valid plan for this question: " + "; ".join(problems),
                input=question, workflow_id=context.workflow_id,
                metadata={"mode": "pipeline", "plan_problems": problems, "error_type": type(exc).__name__},
            )
        return self._stamp(run.message, question, run.workflow_id)

    def is_paused(self, workflow_id: str) -> bool:
        return self.executor.paused(workflow_id) is not None

    async def decide(self, workflow_id: str, decision: CheckpointDecision, context: AgentContext) -> AIMessage:
        """Apply the user's checkpoint decision and continue the paused run. Its stages run
        with the context ``run_plan`` was given (``_skip_complexity`` included); ``context``
        only lends its tracker and execution memory and names the workspace (see
        ``baton.pipeline.executor``)."""
        run = await self.executor.resume(workflow_id, decision, context)
        return self._stamp(run.message, decision.question or "", run.workflow_id)

    @staticmethod
    def _stamp(message: AIMessage, question: str, workflow_id: str) -> AIMessage:
        message.workflow_id = workflow_id
        message.metadata.setdefault("mode", "pipeline")
        if question and message.input is None:
            message.input = question
        return message
