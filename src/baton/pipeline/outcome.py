"""The AIMessages a pipeline answers with, one per outcome.

- ``stage_failed`` for a stage that failed (its reason in ``error``), and as the final answer
  of a run in which any stage failed;
- ``stage_checkpoint`` when the run waits for a decision (the stage's table in ``results``,
  its SQL in ``query``);
- ``pipeline_complete`` at the end of a run without failures (also after a rejection,
  with ``metadata["pipeline"]["status"] == "rejected"``).

Every message carries the per-stage detail: ``data`` maps each stage that returned a table
to its rows (records), and ``metadata["stages"]`` lists every stage in plan order with its
status, row count, SQL, answer and error. ``results``/``query`` of the final message are the
last successful table-producing stage's, the answer a surface shows first. A stage answer's
``staleness_warning`` (stale data or memory) carries over, each line once.
"""

from __future__ import annotations

from typing import Any

from baton.pipeline.models import StageResult
from baton.pipeline.state import PipelineState
from baton.response import AIMessage, ResponseType


def stage_detail(result: StageResult) -> dict[str, Any]:
    detail = result.summary()
    detail.update(question=result.question, query=result.query, answer=result.answer,
                  error_type=result.error_type, duration_ms=result.duration_ms)
    return detail


def _base(state: PipelineState, workflow_id: str, response_type: ResponseType, content: str) -> AIMessage:
    results = state.ordered_results()
    return AIMessage(
        content=content,
        response_type=response_type,
        workflow_id=workflow_id,
        data={r.stage_id: r.query_result.records() for r in results if r.query_result is not None} or None,
        metadata={
            "pipeline": {
                "workflow_id": workflow_id,
                "status": state.status,
                "question": state.plan.question,
                "checkpoint_stage": state.checkpoint_stage,
                "plan": state.plan.to_dict(),
            },
            "stages": [stage_detail(r) for r in results],
        },
        staleness_warning=" ".join(dict.fromkeys(
            r.message.staleness_warning for r in results if r.message is not None and r.message.staleness_warning)) or None,
    )


def failed_message(state: PipelineState, workflow_id: str, result: StageResult) -> AIMessage:
    message = _base(state, workflow_id, ResponseType.STAGE_FAILED, f"Stage {result.stage_id!r} failed: {result.error}")
    message.fail("stage_failed", result.error or f"stage {result.stage_id!r} failed", response_type=ResponseType.STAGE_FAILED)
    message.metadata["failed_stage"] = result.stage_id
    return message


def checkpoint_message(state: PipelineState, workflow_id: str) -> AIMessage:
    sid = state.checkpoint_stage
    assert sid is not None
    result = state.results[sid]
    size = f" ({result.row_count} row(s))" if result.query_result is not None else ""
    pending = [s.stage_id for s in state.plan.stages if s.stage_id not in state.results]
    content = (
        f"Stage {sid!r} finished{size}. Review it: approve to continue"
        + (f" with {', '.join(repr(p) for p in pending)}" if pending else "")
        + ", edit the next stage's question, or reject to stop."
    )
    message = _base(state, workflow_id, ResponseType.STAGE_CHECKPOINT, content)
    message.results = result.query_result
    message.query = result.query
    message.metadata["pending_stages"] = pending
    return message


def final_message(state: PipelineState, workflow_id: str) -> AIMessage:
    results = state.ordered_results()
    failed = [r for r in results if r.status == "error"]
    kind = ResponseType.STAGE_FAILED if failed else ResponseType.PIPELINE_COMPLETE
    lines = [f"- {r.stage_id}: {r.status}" + (f" ({r.row_count} row(s))" if r.row_count is not None else "")
             + (f": {r.error}" if r.error else "") for r in results]
    last = next((r for r in reversed(results) if r.ok), None)
    head = {
        "complete": "Pipeline complete.",
        "failed": f"Pipeline finished with {len(failed)} failed stage(s).",
        "rejected": "Pipeline stopped: a checkpoint was rejected.",
    }.get(state.status, f"Pipeline {state.status}.")
    answer = f"\n\n{last.answer}" if last is not None and last.answer else ""
    message = _base(state, workflow_id, kind, head + answer + "\n\n" + "\n".join(lines))
    if last is not None:
        message.results = last.query_result
        message.query = last.query
    if failed:
        message.fail("stage_failed", "; ".join(f"{r.stage_id}: {r.error}" for r in failed), response_type=ResponseType.STAGE_FAILED)
    return message
