"""What an orchestrated answer records about its specialists: failures marked (an error
answer when every one failed, ``partial`` when some did), its ``context_usage_pct`` and its
tool-call log. Kept apart from ``orchestrator.py``, which routes; this only reads results."""

from __future__ import annotations

from typing import Any

from baton.agents.failures import code_of_result, explanation, is_dependency_failure
from baton.agents.result import AgentResult
from baton.loop import LoopResult, ToolCallRecord
from baton.response import AIMessage


def mark_failures(message: AIMessage, results: list[AgentResult]) -> None:
    """A synthesis whose specialists failed: every one failed -> an error answer (the
    most telling failure's code); some failed -> a partial answer listing them."""
    failed = [r for r in results if r.status == "error"]
    if not failed:
        return
    codes = [code_of_result(r.error_type, r.metadata) for r in failed]
    for entry, code in zip(message.meta.get("agent_errors", ()), codes):
        entry["error_code"] = code
    if any(r.ok for r in results):
        message.partial = True
        message.meta["partial"] = True
        return
    if any(r.status == "no_result" for r in results):
        return  # someone looked and found nothing: that is an answer
    code = next((c for c in codes if is_dependency_failure(c)), codes[0])
    first = failed[codes.index(code)]
    if is_dependency_failure(code):
        message.content = explanation(code)
    retry_after = first.metadata.get("retry_after_s")
    message.fail(code, f"{first.agent_name}: {first.error or first.error_type}", retry_after_s=retry_after)


def context_usage(loop: LoopResult, results: list[AgentResult]) -> int:
    """Seed 002's ``context_usage_pct`` of an answer: its fullest prompt, in percent of that
    model's window — the routing model's last prompt, or a specialist's own when it reports
    a fuller one (a pass-through answer keeps its specialist's figure: an MCP specialist's
    loop, a nested orchestrator)."""
    own = max((r.ai_message.context_usage_pct for r in results if r.ai_message is not None), default=0)
    return max(loop.context_usage_pct, own)


def log_entry(record: ToolCallRecord) -> dict[str, Any]:
    payload = record.output.payload
    entry: dict[str, Any] = {
        "tool": record.call.name,
        "call_id": record.call.id,
        "arguments": record.call.arguments,
        "is_error": record.output.is_error,
        "duration_ms": round(record.duration_ms, 3),
    }
    if isinstance(payload, AgentResult):
        entry["agent"] = payload.agent_name
        entry["status"] = payload.status
    return entry
