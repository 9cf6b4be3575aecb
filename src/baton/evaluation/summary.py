"""The run's figures, from its question results.

Denominators (each rate says what it is out of, and is ``None`` when that is zero):

- execution accuracy: questions with an expected result that were scored (not skipped, not
  gold errors), right / all;
- routing accuracy: scored questions with an expected specialist;
- valid-SQL rate: scored questions where SQL was written, whose SQL ran at least once;
- repairs: questions whose first query failed and a later one ran, and the failed attempts
  before the one that ran;
- safety refusals: questions in which a query was refused as unsafe;
- latency p50/p95: nearest-rank percentiles over the questions that were asked;
- LLM calls, tokens and cost: totals, and per asked question.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from baton.evaluation.results import QuestionResult


@dataclass(slots=True)
class Rate:
    right: int
    out_of: int

    @property
    def value(self) -> float | None:
        return self.right / self.out_of if self.out_of else None

    def to_dict(self) -> dict[str, Any]:
        return {"right": self.right, "out_of": self.out_of, "rate": self.value}

    def __str__(self) -> str:
        return "n/a" if self.value is None else f"{self.value:.1%} ({self.right}/{self.out_of})"


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least ``p`` % of values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(slots=True)
class Summary:
    questions: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    gold_errors: int = 0
    execution: Rate = field(default_factory=lambda: Rate(0, 0))
    routing: Rate = field(default_factory=lambda: Rate(0, 0))
    valid_sql: Rate = field(default_factory=lambda: Rate(0, 0))
    repaired_questions: int = 0
    repair_attempts: int = 0
    safety_refusals: int = 0
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    asked: int = 0
    fast_path_answers: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def per_question(self, total: float) -> float | None:
        return total / self.asked if self.asked else None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for name in ("execution", "routing", "valid_sql"):
            out[name] = getattr(self, name).to_dict()
        out["tokens"] = self.tokens
        out["cost_usd"] = round(self.cost_usd, 8)
        out["llm_calls_per_question"] = self.per_question(self.llm_calls)
        out["tokens_per_question"] = self.per_question(self.tokens)
        out["cost_usd_per_question"] = self.per_question(self.cost_usd)
        return out


def summarise(results: Sequence[QuestionResult]) -> Summary:
    s = Summary(questions=len(results))
    latencies = []
    for r in results:
        s.passed += r.status == "pass"
        s.failed += r.status == "fail"
        s.skipped += r.status == "skipped"
        s.gold_errors += r.status == "gold_error"
        if r.latency_s is not None:
            s.asked += 1
            latencies.append(r.latency_s)
        s.llm_calls += r.llm_calls
        s.input_tokens += r.input_tokens
        s.output_tokens += r.output_tokens
        s.cost_usd += r.cost_usd
        s.unpriced_calls += r.unpriced_calls
        if not r.scored:
            continue
        s.fast_path_answers += bool(r.fast_path)
        if r.execution is not None:
            s.execution.out_of += 1
            s.execution.right += r.execution
        if r.routing is not None:
            s.routing.out_of += 1
            s.routing.right += r.routing
        if r.valid_sql is not None:
            s.valid_sql.out_of += 1
            s.valid_sql.right += r.valid_sql
        if r.repairs:
            s.repaired_questions += 1
            s.repair_attempts += r.repairs
        s.safety_refusals += r.unsafe
    s.latency_p50_s = percentile(latencies, 50)
    s.latency_p95_s = percentile(latencies, 95)
    return s
