"""What the workspace-level tests share: a small sales database and the scripted models that
answer questions about it (the planner's plan, the orchestrator's routing, the SQL specialist's
query), so that test modules need not import each other."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from baton.llm import tool_call
from baton.messages import LLMResponse

SALES = (("north", 10.0), ("south", 4.5), ("north", 2.0))
TOTALS_SQL = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"

PIPELINE_PLAN = {"question": "totals then counts", "stages": [
    {"stage_id": "totals", "tool": "query_database", "question": "total amount by region", "depends_on": [], "checkpoint": True},
    {"stage_id": "counts", "tool": "query_database", "question": "count of sales by region", "depends_on": ["totals"]},
]}
PIPELINE_SQL = {"total": "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region",
                "count": "SELECT region, COUNT(*) AS sales FROM sales GROUP BY region ORDER BY region"}


def sales_db(path: Path, rows: Sequence[tuple[str, float]] = SALES) -> str:
    """A SQLite file with one ``sales (region, amount)`` table; its URL."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sales (region TEXT, amount REAL)")
        conn.executemany("INSERT INTO sales VALUES (?, ?)", rows)
    return f"sqlite:///{path}"


def routed(reply: str, sql: Callable[[str], str] = lambda question: TOTALS_SQL) -> Callable[..., Any]:
    """A model for a database workspace: routes to the ``database`` specialist, whose SQL is
    ``sql(question)``, and answers ``reply`` over its result."""

    def model(messages: list[Any], tools: list[Any]) -> Any:
        if any(t.name == "run_sql" for t in tools):
            if messages[-1].role == "tool":
                return reply
            question = next(m.content for m in messages if m.role == "user")
            return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": sql(question)})])
        if messages[-1].role == "tool":
            return messages[-1].content
        return LLMResponse(tool_calls=[tool_call("database", {"question": messages[-1].content})])

    return model


_pipeline_routed = routed("Here it is.", lambda question: PIPELINE_SQL["total" if "total" in question else "count"])


def pipeline_model(messages: list[Any], tools: list[Any]) -> Any:
    """``routed`` with a planner: plans ``PIPELINE_PLAN`` (totals, a checkpoint, then counts)."""
    if not tools:
        return json.dumps(PIPELINE_PLAN)
    return _pipeline_routed(messages, tools)
