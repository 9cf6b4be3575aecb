"""Scoring one answered question: what the trace says happened, and whether it was right.

The facts come from the events the answer path streamed (``answer_stream``) and the final
``AIMessage``; nothing is re-derived by answering again:

- routing: the agents named by ``agent.routed`` events, in order, each once; right when that
  set is exactly the expected one (a second, needless specialist is a routing error: it
  costs a call and can change a merged answer);
- SQL: every ``sql.attempt`` event. ``valid_sql``: at least one written query ran;
  ``repairs``: the failed attempts before the first that ran (only counted when one ran);
  ``unsafe``: a query was refused by the safety check;
- needs a model: with no model configured, a specialist that answered ``model_not_configured``
  or the no-model reply itself: the question is skipped, not failed, and says why;
- execution: the answer's result table (``results``, else ``data``) against the expected one
  (``compare.compare_results``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from baton.agents.lexical_routing import is_no_model_answer
from baton.evaluation.compare import compare_results
from baton.evaluation.golden import GoldenQuestion, Tolerance
from baton.evaluation.results import QuestionResult, Table
from baton.events import Event
from baton.response import AIMessage

NEEDS_MODEL_REASON = "needs a model: no verified question asks the same thing, and no model is configured (set BATON_MODEL)"
SKIPPED_EVENTS = frozenset({"llm.token"})
MAX_TEXT = 2_000


@dataclass(slots=True)
class TraceFacts:
    routed: list[str] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    needs_model: bool = False
    unsafe_reasons: list[str] = field(default_factory=list)


def trace_facts(events: list[Event]) -> TraceFacts:
    facts = TraceFacts()
    for event in events:
        data = event.data or {}
        if event.type == "agent.routed":
            agent = str(data.get("agent") or "")
            if agent and agent not in facts.routed:
                facts.routed.append(agent)
        elif event.type == "sql.attempt":
            facts.attempts.append(dict(data))
        elif event.type == "agent.end" and data.get("error_type") == "model_not_configured":
            facts.needs_model = True
    return facts


def sql_verdicts(attempts: list[dict[str, Any]]) -> tuple[bool | None, int, bool]:
    """(valid_sql, repairs, unsafe) from the ``sql.attempt`` events (module docstring)."""
    written = [a for a in attempts if a.get("sql")]
    unsafe = any(a.get("outcome") == "unsafe" for a in attempts)
    if not written:
        return None, 0, unsafe
    first_ok = next((i for i, a in enumerate(written) if a.get("outcome") == "success"), None)
    if first_ok is None:
        return False, 0, unsafe
    return True, first_ok, unsafe


def compact_trace(events: list[Event], limit: int) -> list[dict[str, Any]]:
    """The step trace for the report: every event but token deltas, long values cut."""
    trace: list[dict[str, Any]] = []
    for event in events:
        if event.type in SKIPPED_EVENTS:
            continue
        if len(trace) >= limit:
            trace.append({"type": "trace.truncated", "data": {"kept": limit}, "ts": event.ts})
            break
        trace.append({"type": event.type, "data": {k: _short(v) for k, v in (event.data or {}).items()}, "ts": event.ts})
    return trace


def _short(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"


def produced_table(message: AIMessage) -> tuple[list[str], list[list[Any]], bool] | None:
    """The answer's one result table: ``results``, else ``data`` (records, a DataFrame, or a
    merged answer's single dataset). ``None`` when there is none, or several."""
    if message.results is not None:
        return list(message.results.columns), [list(r) for r in message.results.rows], bool(message.results.truncated)
    data = message.data
    if isinstance(data, dict):
        if len(data) != 1:
            return None
        data = next(iter(data.values()))
    if hasattr(data, "itertuples") and hasattr(data, "columns"):  # a DataFrame
        return [str(c) for c in data.columns], [list(r) for r in data.itertuples(index=False, name=None)], False
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        columns = list(data[0]) if data else []
        return columns, [[r.get(c) for c in columns] for r in data], False
    return None


def needs_model(message: AIMessage, facts: TraceFacts) -> bool:
    return facts.needs_model or is_no_model_answer(message)


def judge(q: GoldenQuestion, result: QuestionResult, message: AIMessage, facts: TraceFacts, *,
          expected: Table | None, expected_rows: list[list[Any]] | None, produced: tuple[list[str], list[list[Any]], bool] | None,
          ordered: bool, tolerance: Tolerance) -> QuestionResult:
    """Fill ``result``'s verdicts (module docstring). ``produced`` is the table to compare
    (already re-run in full when the answer's copy was cut by the row cap)."""
    result.routed_to = list(facts.routed)
    result.sql_attempts = sum(1 for a in facts.attempts if a.get("sql"))
    result.valid_sql, result.repairs, result.unsafe = sql_verdicts(facts.attempts)
    result.produced_sql = message.query or next((a.get("sql") for a in reversed(facts.attempts) if a.get("sql")), None)
    result.answer_error = message.error or _agent_error(message)
    result.answer_text = _short(message.content or "")
    result.fast_path = message.meta.get("fast_path")
    result.ordered = ordered
    result.expected = expected
    if produced is not None:
        result.produced = Table.of(produced[0], produced[1], truncated=produced[2])
    if q.specialists:
        result.routing = set(facts.routed) == set(q.specialists)
        if not result.routing:
            routed = ", ".join(facts.routed) or "no specialist"
            result.reasons.append(f"routed to {routed}; expected {', '.join(q.specialists)}")
    if expected_rows is not None:
        result.execution = False
        if result.unsafe:
            result.reasons.append("unsafe SQL refused: " + _unsafe_detail(facts))
        elif produced is None:
            why = f"the answer was an error: {result.answer_error}" if result.answer_error else "the answer has no result table"
            result.reasons.append(why)
        elif produced[2]:
            result.reasons.append("the produced result is larger than the scoring row cap")
        else:
            verdict = compare_results(expected_rows, produced[1], ordered=ordered, tolerance=tolerance)
            result.execution = verdict.equal
            if not verdict.equal:
                result.reasons.append(f"wrong result: {verdict.reason}")
    checks = [c for c in (result.execution, result.routing) if c is not None]
    result.status = "pass" if checks and all(checks) else "fail"
    return result


def _agent_error(message: AIMessage) -> str | None:
    errors = message.meta.get("agent_errors") or []
    if errors:
        first = errors[0]
        return f"{first.get('agent')}: {first.get('error_type')}: {first.get('error')}"
    return None


def _unsafe_detail(facts: TraceFacts) -> str:
    for attempt in facts.attempts:
        if attempt.get("outcome") == "unsafe":
            return str(attempt.get("sql") or "")[:300]
    return ""
