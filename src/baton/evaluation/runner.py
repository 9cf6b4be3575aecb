"""Running a golden set: every question through the Workspace's one answer path.

For each question, in a bounded pool of ``concurrency`` workers:

1. its target (the workspace for its database, opened once);
2. the expected result: the given rows, or the gold query run read-only on the target's
   database (a gold query that fails or is refused makes the question ``gold_error`` and
   nothing is asked: no model calls are spent on a question that cannot be scored);
3. the answer, from ``workspace.answer_stream(question)`` in a new session, every event
   kept for the trace, the model calls counted by the meter, wall time measured around it;
4. when the answer's table was cut by the row cap, its SQL is run again read-only with the
   scoring cap, so a right but long answer is not judged by its first page;
5. the verdicts (``judge.py``).

Budget (``budget_usd``): before a question is scheduled the running cost of the whole run
(finished questions and those in flight) is checked; once it has reached the budget, no
further question starts, those left are ``skipped`` with that reason, and the run says so.
Questions already running finish. A call to a model without a price makes the cost unknown,
which stops scheduling too: a budget that cannot be measured is not kept by guessing.

Decision (the issue was silent): each question has a deadline (``timeout_s``, default 300 s);
one that passes it fails with that reason and the run goes on.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from baton.evaluation.compare import gold_orders
from baton.evaluation.golden import GoldenQuestion, GoldenSet, Tolerance
from baton.evaluation.judge import NEEDS_MODEL_REASON, compact_trace, judge, needs_model, produced_table, trace_facts
from baton.evaluation.metering import Meter, Usage
from baton.evaluation.results import EvalRun, QuestionResult, Table
from baton.evaluation.targets import Target, TargetError, Targets
from baton.response import AIMessage


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How a run goes. ``tolerance``: for questions that give none."""

    concurrency: int = 4
    budget_usd: float | None = None
    tolerance: Tolerance = field(default_factory=Tolerance)
    timeout_s: float = 300.0
    scoring_row_cap: int = 100_000
    trace_events: int = 300

    def __post_init__(self) -> None:
        from baton.errors import ConfigurationError

        if self.concurrency < 1:
            raise ConfigurationError("concurrency must be at least 1")
        if self.budget_usd is not None and self.budget_usd < 0:
            raise ConfigurationError("the budget must not be negative")
        if self.timeout_s <= 0 or self.scoring_row_cap < 1:
            raise ConfigurationError("timeout_s and scoring_row_cap must be positive")


class _Budget:
    def __init__(self, meter: Meter, limit: float | None) -> None:
        self.meter, self.limit = meter, limit
        self.stopped_because: str | None = None

    def exhausted(self) -> bool:
        if self.limit is None:
            return False
        if self.stopped_because is None:
            total = self.meter.total
            if total.unpriced_calls:
                self.stopped_because = f"budget: the cost of {', '.join(sorted(total.models))} is unknown (no price configured)"
            elif total.cost_usd >= self.limit:
                self.stopped_because = f"budget reached: ${total.cost_usd:.4f} spent of ${self.limit:.4f}"
        return self.stopped_because is not None


async def run_eval(golden: GoldenSet, targets: Targets, *, meter: Meter | None = None, options: RunOptions | None = None,
                   on_result: Callable[[QuestionResult], None] | None = None, model: str | None = None) -> EvalRun:
    """Ask and score every question of ``golden`` (module docstring); results in the set's order.
    ``model`` labels the run in reports; by default the workspaces' models (``None``: none)."""
    options = options or RunOptions()
    meter = meter or Meter()
    budget = _Budget(meter, options.budget_usd)
    started, clock = dt.datetime.now(dt.UTC), time.perf_counter()
    results: list[QuestionResult | None] = [None] * len(golden.questions)
    pending = iter(enumerate(golden.questions))

    async def worker() -> None:
        for index, q in pending:
            if budget.exhausted():
                result = QuestionResult(q.id, q.question, status="skipped", skip_reason=budget.stopped_because,
                                        tags=list(q.tags), database=q.database, expected_sql=q.sql,
                                        expected_specialists=list(q.specialists))
            else:
                result = await ask_one(q, targets, meter, options)
            results[index] = result
            if on_result is not None:
                on_result(result)

    await asyncio.gather(*(worker() for _ in range(min(options.concurrency, max(1, len(golden.questions))))))
    done = [r for r in results if r is not None]
    configured = sorted({f"{ws.model.provider}:{ws.model.model}" for ws in targets.workspaces if ws.model is not None})
    model = model or ", ".join(configured) or None
    run = EvalRun(golden.name, golden.source, done, model=model, started_at=started.isoformat(timespec="seconds"),
                  duration_s=round(time.perf_counter() - clock, 3), concurrency=options.concurrency,
                  budget_usd=options.budget_usd, budget_stopped=budget.stopped_because is not None)
    if budget.stopped_because:
        run.notes.append(f"stopped scheduling: {budget.stopped_because}")
    if model is None:  # no workspace that answered has a model
        run.notes.append(no_model_note(done, meter))
    return run


def no_model_note(results: list[QuestionResult], meter: Meter) -> str:
    """What a run without a model did: how many it answered with how many LLM calls, and how many it skipped."""
    answered = sum(1 for r in results if r.scored)
    needs = sum(1 for r in results if r.status == "skipped" and r.skip_reason == NEEDS_MODEL_REASON)
    note = f"No model configured: {answered} question(s) answered with {meter.total.calls} LLM calls"
    return note + (f"; {needs} skipped because they need a model (set BATON_MODEL)." if needs else ".")


async def ask_one(q: GoldenQuestion, targets: Targets, meter: Meter, options: RunOptions) -> QuestionResult:
    """One question, asked and scored; never raises for the question's own failures."""
    result = QuestionResult(q.id, q.question, tags=list(q.tags), database=q.database, expected_sql=q.sql,
                            expected_specialists=list(q.specialists))
    try:
        target = await targets.get(q.database)
    except TargetError as exc:
        result.reasons.append(str(exc))
        return result
    tolerance = q.tolerance or options.tolerance
    expected, expected_rows = None, None
    if q.expects_result:
        gold = await _expected(q, target, options)
        if isinstance(gold, str):
            result.status, result.reasons = "gold_error", [gold]
            return result
        expected, expected_rows = gold
    ordered = q.ordered if q.ordered is not None else bool(q.rows is None and q.sql and gold_orders(q.sql, target.dialect))
    with meter.question() as usage:
        clock = time.perf_counter()
        try:
            message, events = await asyncio.wait_for(_answer(target, q.question), options.timeout_s)
        except TimeoutError:
            _spent(result, usage, time.perf_counter() - clock)
            result.reasons.append(f"no answer within {options.timeout_s:g} s")
            return result
        except Exception as exc:  # the answer path itself broke: the question fails, the run goes on
            _spent(result, usage, time.perf_counter() - clock)
            result.reasons.append(f"the answer path raised {type(exc).__name__}: {exc}")
            return result
        latency = time.perf_counter() - clock
    _spent(result, usage, latency)
    result.trace = compact_trace(events, options.trace_events)
    facts = trace_facts(events)
    if target.workspace.no_model and needs_model(message, facts):
        result.status, result.skip_reason = "skipped", NEEDS_MODEL_REASON
        result.routed_to = list(facts.routed)
        result.answer_text = (message.content or "")[:500]
        result.expected = expected
        return result
    produced = produced_table(message)
    if produced is not None and produced[2] and message.query:
        produced = await _rerun(message.query, target, options) or produced
    return judge(q, result, message, facts, expected=expected, expected_rows=expected_rows, produced=produced,
                 ordered=ordered, tolerance=tolerance)


def _spent(result: QuestionResult, usage: Usage, seconds: float) -> None:
    result.latency_s = round(seconds, 4)
    result.llm_calls, result.input_tokens, result.output_tokens = usage.calls, usage.input_tokens, usage.output_tokens
    result.cost_usd, result.unpriced_calls = round(usage.cost_usd, 8), usage.unpriced_calls


async def _answer(target: Target, question: str) -> tuple[AIMessage, list[Any]]:
    events: list[Any] = []
    message: AIMessage | None = None
    async for item in target.workspace.answer_stream(question):
        if isinstance(item, AIMessage):
            message = item
        else:
            events.append(item)
    if message is None:
        raise RuntimeError("the answer stream ended without an answer")
    return message, events


async def _expected(q: GoldenQuestion, target: Target, options: RunOptions) -> tuple[Table, list[list[Any]]] | str:
    """The expected table and all its rows, or why the gold query could not give them."""
    if q.rows is not None:
        rows = [list(r) for r in q.rows]
        return Table.of([f"column {i + 1}" for i in range(len(rows[0]) if rows else 0)], rows), rows
    assert q.sql is not None
    try:
        gold = await target.gold.query(q.sql, row_cap=options.scoring_row_cap + 1)
    except Exception as exc:
        return f"the gold query failed ({type(exc).__name__}): {exc}"
    if gold.truncated or gold.row_count > options.scoring_row_cap:
        return f"the gold query returns more than {options.scoring_row_cap} rows (or bytes than the cap): too large to compare"
    rows = [list(r) for r in gold.rows]
    return Table.of(gold.columns, rows), rows


async def _rerun(sql: str, target: Target, options: RunOptions) -> tuple[list[str], list[list[Any]], bool] | None:
    """The produced query run again, read-only and checked, with the scoring cap."""
    try:
        full = await target.gold.query(sql, row_cap=options.scoring_row_cap)
    except Exception:
        return None
    return list(full.columns), [list(r) for r in full.rows], bool(full.truncated)
