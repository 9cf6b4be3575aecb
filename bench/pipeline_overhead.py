"""What the pipeline machinery costs per stage, with a runner that does no work.

Prints, for a 40-stage wide plan and a 40-stage chain: the in-process executor's time per
stage, and the durable executor's (DBOS on a SQLite system database, worker in this process)
wall time per stage including queueing. Run: .venv/bin/python bench/pipeline_overhead.py
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from baton.agents import AgentContext
from baton.pipeline import ExecutionPlan, PipelineExecutor, PlanStage, StageResult
from baton.response import QueryResult

N = 40


class NoWork:
    async def run(self, stage, inputs, context) -> StageResult:
        return StageResult(stage.stage_id, query_result=QueryResult(columns=["n"], rows=[[1]]))


def wide() -> ExecutionPlan:
    return ExecutionPlan("wide", [PlanStage(f"s{i}", "query_database", "x") for i in range(N)])


def chain() -> ExecutionPlan:
    return ExecutionPlan("chain", [PlanStage(f"s{i}", "query_database", "x", depends_on=[f"s{i-1}"] if i else []) for i in range(N)])


async def in_process(plan_factory, repeat: int = 20) -> float:
    executor = PipelineExecutor(NoWork())
    started = time.perf_counter()
    for _ in range(repeat):
        await executor.start(plan_factory(), AgentContext())
    return (time.perf_counter() - started) / (repeat * N) * 1000


def durable(plan_factory) -> float:
    from baton.pipeline.durable import DurableConfig, PipelineClient, PipelineWorker

    with tempfile.TemporaryDirectory() as tmp:
        config = DurableConfig(system_database_url=f"sqlite:///{Path(tmp) / 'sys.sqlite'}", queue_polling_interval_s=0.05)
        with PipelineWorker(config, NoWork()), PipelineClient(config) as client:
            client.result(client.submit(ExecutionPlan("warm", [PlanStage("w", "query_database", "x")])), timeout_s=60)
            started = time.perf_counter()
            client.result(client.submit(plan_factory()), timeout_s=120, poll_s=0.01)
            return (time.perf_counter() - started) / N * 1000


def main() -> None:
    for name, factory in (("wide", wide), ("chain", chain)):
        print(f"in-process {name:5s} {N} stages: {asyncio.run(in_process(factory)):.3f} ms/stage")
    for name, factory in (("wide", wide), ("chain", chain)):
        print(f"durable    {name:5s} {N} stages (DBOS, SQLite): {durable(factory):.2f} ms/stage (includes queue pickup)")


if __name__ == "__main__":
    main()
