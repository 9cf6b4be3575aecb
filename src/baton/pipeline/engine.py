"""The loop both executors share: run layers until the plan ends or a checkpoint waits.

``advance`` is given *how* to run a layer (in-process: ``asyncio.gather`` over the runner;
durable: one DBOS step per stage) and where events go; the rules themselves live in
``PipelineState``. Events: ``stage.start``, ``stage.end``, ``stage.failed``,
``stage.skipped``, ``stage.checkpoint``, ``pipeline.complete``; each carries ``stage_id``
(or the pipeline status) so a UI can draw the plan as it runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from baton.events import Event, PipelineComplete, StageCheckpoint, StageEnd, StageFailed, StageSkipped
from baton.pipeline.models import PlanStage, StageResult
from baton.pipeline.outcome import checkpoint_message, failed_message, final_message
from baton.pipeline.state import PipelineState
from baton.response import AIMessage

StageDone = Callable[[PlanStage, StageResult], StageResult]


Emit = Callable[[Event], None]


LayerRunner = Callable[[list[PlanStage], StageDone], Awaitable[None]]
"""Runs the given stages (concurrently) and calls ``done(stage, result)`` for each as it
finishes; ``done`` records the result (validation included) and emits ``stage.end``."""


async def advance(
    state: PipelineState,
    workflow_id: str,
    run_layer: LayerRunner,
    emit: Emit,
    *,
    units: Mapping[str, str] | None = None,
) -> list[AIMessage]:
    """Drive ``state`` until it pauses or ends; return the outcome messages produced."""
    messages: list[AIMessage] = []

    def done(stage: PlanStage, raw: StageResult) -> StageResult:
        result = state.record(stage, raw)
        emit(StageEnd(stage_id=stage.stage_id, status=result.status, rows=result.row_count, duration_ms=result.duration_ms))
        if result.status == "error":
            emit(StageFailed(stage_id=stage.stage_id, reason=result.error, error_type=result.error_type))
            messages.append(failed_message(state, workflow_id, result))
        return result

    while state.status == "running":
        runnable, blocked = state.begin_layer(units)
        for result in blocked:
            if result.status == "skipped":
                emit(StageSkipped(stage_id=result.stage_id, reason=result.error))
            else:
                emit(StageFailed(stage_id=result.stage_id, reason=result.error, error_type=result.error_type))
                messages.append(failed_message(state, workflow_id, result))
        if runnable:
            await run_layer(runnable, done)
        state.end_layer()

    if state.status == "paused":
        sid = state.checkpoint_stage
        emit(StageCheckpoint(stage_id=sid, rows=state.results[sid].row_count if sid else None))
        messages.append(checkpoint_message(state, workflow_id))
    elif state.done:
        emit(PipelineComplete(status=state.status, stages=[r.summary() for r in state.ordered_results()]))
        messages.append(final_message(state, workflow_id))
    return messages
