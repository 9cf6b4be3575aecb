"""The SQL agent's typed results: one ``QueryAttempt`` per SQL candidate, and
``SQLAgentResult`` (seed 002 "Agent Result Protocol") for the whole request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from baton.agents import AgentResult
from baton.events import SQLAttempt
from baton.response import QueryResult

# what happened to one candidate, in validation-loop order
OUTCOMES = ("no_sql", "unsafe", "invalid", "plan_rejected", "error", "success")


@dataclass
class QueryAttempt:
    """One SQL candidate and what the validation loop made of it.

    ``outcome``: ``success`` (ran), ``error`` (the database refused it; ``error_class``
    says why), ``invalid`` (pre-validation found unknown tables/columns), ``plan_rejected``
    (EXPLAIN found a full scan of a big table), ``unsafe`` (the safety check refused it),
    ``no_sql`` (the model answered without a query). ``sql`` is what ran (after any
    deterministic rewrites); ``original_sql`` is what the model wrote.
    """

    number: int
    sql: str
    outcome: str
    original_sql: str = ""
    explanation: str = ""
    error_class: str | None = None
    error: str | None = None
    duration_ms: float = 0.0
    row_count: int | None = None
    truncated: bool = False
    tables: list[str] = field(default_factory=list)
    rewrites: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    missing_names: list[str] = field(default_factory=list)
    result_preview: list[list[Any]] | None = None  # a few rows, for learning analysis only

    @property
    def succeeded(self) -> bool:
        return self.outcome == "success"

    def event(self, connection_id: str) -> SQLAttempt:
        """This attempt as the ``sql.attempt`` event (the SQL and semantic specialists emit it)."""
        return SQLAttempt(sql=self.sql, attempt=self.number, outcome=self.outcome, error_class=self.error_class,
                          row_count=self.row_count, duration_ms=self.duration_ms, connection_id=connection_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number, "sql": self.sql, "outcome": self.outcome, "error_class": self.error_class,
            "error": self.error, "duration_ms": self.duration_ms, "row_count": self.row_count,
            "rewrites": list(self.rewrites), "warnings": list(self.warnings),
        }


@dataclass
class SQLAgentResult(AgentResult):
    query: str | None = None
    query_explanation: str | None = None
    results: QueryResult | None = None
    attempts: list[QueryAttempt] = field(default_factory=list)
    insights: list[dict[str, Any]] = field(default_factory=list)
    learnings: list[Any] = field(default_factory=list)  # list[ExtractedLearning]
    warnings: list[str] = field(default_factory=list)
