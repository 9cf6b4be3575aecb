"""How a stage is run: the ``StageRunner`` protocol and the default agent-backed runner.

The executor knows nothing about SQL or documents: it hands a stage, its dependencies'
results and the request context to a ``StageRunner``. ``AgentStageRunner`` maps each stage
tool to a specialist (``BaseAgent``):

- ``query_database`` -> the SQL specialist, ``run(context, question=...)``;
- ``search_codebase`` -> the knowledge specialist, ``run(context, question=...)``;
- ``analyze_results`` -> the DataFrame specialist, ``run(context, question=...,
  frames={stage_id: DataFrame})`` with one frame per dependency that returned rows.

The agent's rich answer (``AgentResult.ai_message``) becomes the stage's table, SQL and
text; an agent that raises or returns ``status="error"`` fails the stage with its message,
never the pipeline. A runner may be called again for a stage after a crash (durable runs are
at-least-once), so what it does must be idempotent: read-only queries are.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from baton.pipeline.models import ANALYZE_RESULTS, PlanStage, StageResult

if TYPE_CHECKING:
    from baton.agents import AgentContext, AgentResult, BaseAgent


@runtime_checkable
class StageRunner(Protocol):
    """Runs one stage. ``inputs`` holds the results of the stage's ``depends_on`` stages."""

    async def run(self, stage: PlanStage, inputs: dict[str, StageResult], context: AgentContext) -> StageResult: ...


class AgentStageRunner:
    """Runs each stage with the agent registered for its tool (see the module docstring)."""

    def __init__(self, tools: Mapping[str, BaseAgent]) -> None:
        self.tools = dict(tools)

    async def run(self, stage: PlanStage, inputs: dict[str, StageResult], context: AgentContext) -> StageResult:
        started = time.time()
        agent = self.tools.get(stage.tool)
        if agent is None:
            return _failed(stage, started, f"no agent is registered for tool {stage.tool!r} (have: {', '.join(sorted(self.tools)) or 'none'})", "configuration")
        kwargs: dict[str, Any] = {"question": stage.question}
        if stage.tool == ANALYZE_RESULTS:
            kwargs["frames"] = {sid: r.query_result.to_dataframe() for sid, r in inputs.items() if r.ok and r.query_result is not None}
        stage_context = context.derive(user_question=stage.question, extra={"pipeline_stage": stage.stage_id})
        try:
            result = await agent.run(stage_context, **kwargs)
        except Exception as exc:  # an agent failure fails the stage, never the pipeline
            return _failed(stage, started, f"{agent.name} raised {type(exc).__name__}: {exc}", type(exc).__name__)
        return stage_result_from_agent(stage, result, started=started)


def stage_result_from_agent(stage: PlanStage, result: AgentResult, *, started: float) -> StageResult:
    """Turn an agent's typed result into a ``StageResult`` (table, SQL, text, units)."""
    message = result.ai_message
    table = getattr(result, "results", None) or (message.results if message else None)
    query = getattr(result, "query", None) or (message.query if message else None)
    finished = time.time()
    units = result.metadata.get("units") or (message.metadata.get("units") if message else None) or {}
    out = StageResult(
        stage_id=stage.stage_id,
        tool=stage.tool,
        question=stage.question,
        status="error" if result.status == "error" else "success",
        query=query,
        query_result=table,
        answer=(message.content if message and message.content else result.result) or None,
        error=result.error if result.status == "error" else None,
        error_type=(result.error_type or "agent") if result.status == "error" else None,
        units={str(k): str(v) for k, v in dict(units).items()},
        message=message,
        started_at=started,
        finished_at=finished,
        duration_ms=round((finished - started) * 1000, 3),
        metadata={"agent": result.agent_name, "agent_status": result.status, "token_usage": dict(result.token_usage)},
    )
    if out.status == "error" and not out.error:
        out.error = f"{result.agent_name or 'agent'} failed without a message"
    return out


def _failed(stage: PlanStage, started: float, error: str, error_type: str) -> StageResult:
    finished = time.time()
    return StageResult(
        stage_id=stage.stage_id, tool=stage.tool, question=stage.question, status="error",
        error=error, error_type=error_type, started_at=started, finished_at=finished,
        duration_ms=round((finished - started) * 1000, 3),
    )
