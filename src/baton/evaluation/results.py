"""What one question's evaluation found, and the whole run: plain data that round-trips JSON.

``QuestionResult.status`` is one of:

- ``pass``: every check that applies passed (execution, routing);
- ``fail``: one did not (``reasons`` says which and why), including an answer that was an
  error, an unsafe query refused, or a question that timed out;
- ``skipped``: not scored, with ``skip_reason`` (it needs a model and none is configured;
  the budget was reached before it was scheduled);
- ``gold_error``: the gold query itself failed or was refused: the golden set needs fixing,
  and the question counts in no accuracy.

Rows kept for the report are capped (``ROWS_KEPT``) so a report stays readable; the
comparison itself always uses every row.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from baton.evaluation.compare import normalise

ROWS_KEPT = 50
STATUSES = ("pass", "fail", "skipped", "gold_error")


@dataclass(slots=True)
class Table:
    """Columns and (some of the) rows of a result, JSON-safe."""

    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    row_count: int = 0
    truncated: bool = False

    @classmethod
    def of(cls, columns: list[str], rows: list[Any], *, truncated: bool = False) -> Table:
        return cls([str(c) for c in columns], [[normalise(v) for v in row] for row in rows[:ROWS_KEPT]], len(rows), truncated)

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> Table | None:
        if raw is None:
            return None
        return cls(list(raw.get("columns") or []), [list(r) for r in raw.get("rows") or []], int(raw.get("row_count") or 0),
                   bool(raw.get("truncated")))


@dataclass(slots=True)
class QuestionResult:
    """One golden question, asked and scored (module docstring)."""

    id: str
    question: str
    status: str = "fail"
    reasons: list[str] = field(default_factory=list)
    skip_reason: str | None = None
    tags: list[str] = field(default_factory=list)
    database: str | None = None
    execution: bool | None = None  # None: no expected result to compare
    routing: bool | None = None  # None: no expected specialist
    expected_specialists: list[str] = field(default_factory=list)
    routed_to: list[str] = field(default_factory=list)
    expected_sql: str | None = None
    produced_sql: str | None = None
    expected: Table | None = None
    produced: Table | None = None
    ordered: bool = False
    sql_attempts: int = 0
    valid_sql: bool | None = None  # None: no SQL was written
    repairs: int = 0  # failed attempts before the one that ran
    unsafe: bool = False  # a query was refused as unsafe
    answer_error: str | None = None
    answer_text: str = ""
    latency_s: float | None = None
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    fast_path: str | None = None
    trace: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        return self.status in ("pass", "fail")

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["tokens"] = self.tokens
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> QuestionResult:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in raw.items() if k in known}
        values["expected"] = Table.from_dict(raw.get("expected"))
        values["produced"] = Table.from_dict(raw.get("produced"))
        return cls(**values)


@dataclass(slots=True)
class EvalRun:
    """A whole run: the set, the results in the set's order, and how the run went."""

    set_name: str
    source: str
    results: list[QuestionResult]
    model: str | None = None  # "provider:model", or None: no model configured
    started_at: str = ""
    duration_s: float = 0.0
    concurrency: int = 1
    budget_usd: float | None = None
    budget_stopped: bool = False
    notes: list[str] = field(default_factory=list)
