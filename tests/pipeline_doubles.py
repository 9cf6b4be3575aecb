"""Small real agents for the pipeline tests, and the worker factory the durable tests start.

Nothing is mocked: ``SQLiteAgent`` runs its question as SQL on a real SQLite database,
``FramesAgent`` runs its question as DuckDB SQL over the DataFrames the pipeline hands it,
``DocsAgent`` answers from a dict of documents. ``RecordingRunner`` (for the subprocess
tests) appends one line per stage execution to a log file, so a test can count how often
each stage really ran, and blocks a stage whose question says so until a release file
appears.

A helper module, not a test module (issue 17): it held a test of these doubles themselves,
which proved only that the stand-ins work. They are not Baton's API (unlike ScriptedModel and
FunctionModel, whose public behaviour has tests of its own), and every pipeline test that uses
them asserts the real numbers they compute, so a broken double fails those tests.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

import duckdb

from baton.agents import AgentContext, AgentResult, BaseAgent
from baton.pipeline import AgentStageRunner, PlanStage, StageResult
from baton.response import AIMessage, QueryResult

SALES_SQL = """
CREATE TABLE sales (region TEXT, product TEXT, amount INTEGER, amount_cents INTEGER);
INSERT INTO sales VALUES ('north', 'tea', 10, 1000), ('north', 'coffee', 20, 2000),
  ('south', 'tea', 5, 500), ('south', 'coffee', 7, 700), ('west', 'tea', 3, 300);
CREATE TABLE regions (region TEXT, region_code INTEGER, manager TEXT);
INSERT INTO regions VALUES ('north', 1, 'ana'), ('south', 2, 'bo'), ('west', 3, 'cy');
"""


def sales_db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.executescript(SALES_SQL)
    return conn


def _table(cursor: sqlite3.Cursor) -> QueryResult:
    rows = [list(r) for r in cursor.fetchall()]
    columns = [d[0] for d in cursor.description or ()]
    return QueryResult(columns=columns, rows=rows)


class SQLiteAgent(BaseAgent):
    """Runs the question (SQL) on its SQLite database."""

    name = "sql"

    def __init__(self, conn: sqlite3.Connection | None = None, units: dict[str, str] | None = None) -> None:
        super().__init__()
        self.conn = conn or sales_db()
        self.units = units or {}

    async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
        await asyncio.sleep(0)
        try:
            table = _table(self.conn.execute(question))
        except sqlite3.Error as exc:
            return AgentResult(agent_name=self.name, task=question, status="error", error=str(exc), error_type="sql_error")
        message = AIMessage(content=f"{table.row_count} rows", results=table, query=question)
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message,
                           metadata={"units": self.units})


class FramesAgent(BaseAgent):
    """Runs the question as DuckDB SQL over the frames it is given (named by stage id)."""

    name = "dataframe"

    def __init__(self) -> None:
        super().__init__()
        self.seen_frames: list[dict] = []

    async def run(self, context: AgentContext, *, question: str, frames: dict | None = None, **kw) -> AgentResult:
        frames = frames or {}
        self.seen_frames.append(frames)
        con = duckdb.connect()
        for name, frame in frames.items():
            con.register(name, frame)
        cursor = con.execute(question)
        table = QueryResult(columns=[d[0] for d in cursor.description], rows=[list(r) for r in cursor.fetchall()])
        message = AIMessage(content=f"analysis over {sorted(frames)}", results=table)
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message)


class DocsAgent(BaseAgent):
    """Answers with the documents that contain every word of the question."""

    name = "knowledge"
    DOCS = {
        "billing.md": "Revenue is stored in cents in the sales table.",
        "regions.md": "Each region has one manager.",
    }

    async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
        words = [w.lower() for w in question.split()]
        hits = [name for name, text in self.DOCS.items() if all(w in text.lower() for w in words)]
        if not hits:
            return AgentResult(agent_name=self.name, task=question, status="no_result", result="nothing found")
        text = " ".join(self.DOCS[h] for h in hits)
        return AgentResult(agent_name=self.name, task=question, result=text, ai_message=AIMessage(content=text))


def agent_runner(conn: sqlite3.Connection | None = None) -> AgentStageRunner:
    return AgentStageRunner({"query_database": SQLiteAgent(conn), "analyze_results": FramesAgent(), "search_codebase": DocsAgent()})


class RecordingRunner:
    """Logs each stage execution to ``$BATON_TEST_PIPELINE_DIR/executions.log`` as
    ``<workflow> <stage> <executor> <pid>`` and blocks a stage whose question contains
    ``/*block*/`` until the file ``release`` exists in that directory."""

    def __init__(self, directory: Path, executor_id: str) -> None:
        self.directory = directory
        self.executor_id = executor_id
        self.inner = agent_runner()

    async def run(self, stage: PlanStage, inputs: dict[str, StageResult], context: AgentContext) -> StageResult:
        line = f"{context.workflow_id} {stage.stage_id} {self.executor_id} {os.getpid()}\n"
        with open(self.directory / "executions.log", "a") as log:
            log.write(line)
        if "/*block*/" in stage.question:
            (self.directory / f"blocked-{stage.stage_id}-{os.getpid()}").write_text(line)
            while not (self.directory / "release").exists():
                await asyncio.sleep(0.05)
        if "/*slow*/" in stage.question:
            await asyncio.sleep(0.2)
        return await self.inner.run(stage, inputs, context)


def make_recording_runner() -> RecordingRunner:
    """The worker factory (``pipeline_doubles:make_recording_runner``)."""
    return RecordingRunner(Path(os.environ["BATON_TEST_PIPELINE_DIR"]), os.environ.get("BATON_TEST_EXECUTOR", "?"))

