"""Stage and result models (seed 002 "Pipeline Data Models").

``PlanStage``/``StageValidation`` describe what to run (``ExecutionPlan``, the plan of them
with its checks, is ``plan.py``); ``StageResult`` is what one stage produced. Two fields go
beyond the seed, both optional: ``join_on`` and ``compare`` on a stage name the columns it
joins on and the measures it compares across its dependencies' results, which is what the
convergence check (``convergence.py``) verifies.

Strict JSON parsing lives in ``plan_json.py``; layering lives in ``graph.py``. Everything
here round-trips through plain JSON (``to_dict``/``from_dict``), because a durable run
checkpoints every stage result in its system database.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from baton.response import AIMessage, QueryResult, from_jsonable, to_jsonable

QUERY_DATABASE = "query_database"
SEARCH_CODEBASE = "search_codebase"
ANALYZE_RESULTS = "analyze_results"
STAGE_TOOLS: tuple[str, ...] = (QUERY_DATABASE, SEARCH_CODEBASE, ANALYZE_RESULTS)
"""The tools a stage may name: the SQL, knowledge and DataFrame specialists."""

StageStatus = Literal["success", "error", "skipped"]


@dataclass
class StageValidation:
    """Checks a stage's rows must pass, else the stage fails (``stage_failed``)."""

    min_rows: int | None = None
    max_rows: int | None = None
    required_columns: list[str] = field(default_factory=list)


@dataclass
class PlanStage:
    stage_id: str
    tool: str
    question: str
    description: str = ""
    depends_on: list[str] = field(default_factory=list)
    checkpoint: bool = False
    validation: StageValidation | None = None
    join_on: list[str] = field(default_factory=list)
    compare: list[str] = field(default_factory=list)


def stage_from_dict(raw: dict[str, Any]) -> PlanStage:
    """Inverse of ``dataclasses.asdict(stage)`` for a stage that was already validated."""
    values = dict(raw)
    if values.get("validation") is not None:
        values["validation"] = StageValidation(**values["validation"])
    return PlanStage(**values)


@dataclass
class StageResult:
    """What one stage produced. ``error_type`` tells why a stage failed (``validation``,
    ``convergence``, ``agent``, the exception class, ...) or was skipped (``dependency``,
    ``rejected``)."""

    stage_id: str
    status: StageStatus = "success"
    tool: str = ""
    question: str = ""
    query: str | None = None
    query_result: QueryResult | None = None
    answer: str | None = None
    error: str | None = None
    error_type: str | None = None
    units: dict[str, str] = field(default_factory=dict)
    message: AIMessage | None = None
    started_at: float | None = None
    finished_at: float | None = None
    duration_ms: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "success"

    @property
    def row_count(self) -> int | None:
        return None if self.query_result is None else self.query_result.row_count

    def summary(self) -> dict[str, Any]:
        """A short JSON-able view for events and the outcome message's data."""
        out: dict[str, Any] = {"stage_id": self.stage_id, "status": self.status, "tool": self.tool}
        if self.query_result is not None:
            out["rows"] = self.query_result.row_count
            out["columns"] = list(self.query_result.columns)
        if self.error:
            out["error"] = self.error
        return out

    def to_dict(self) -> dict[str, Any]:
        raw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "message"}
        out = to_jsonable(raw)
        out["message"] = None if self.message is None else self.message.to_dict()
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StageResult:
        values = {k: from_jsonable(v) for k, v in raw.items() if k != "message"}
        if values.get("query_result") is not None:
            values["query_result"] = QueryResult(**values["query_result"])
        message = raw.get("message")
        values["message"] = None if message is None else AIMessage.from_dict(message)
        return cls(**values)
