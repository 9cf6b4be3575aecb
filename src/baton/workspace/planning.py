"""Multi-step questions in a workspace: the planner, the stage runner, the executor.

``attach_planning(ws, model)`` gives the workspace's orchestrator a planner and an
executor: each ``query_database`` stage goes back through the orchestrator, which routes
it to the right specialist (stages carry ``_skip_complexity``, so they never plan again);
``analyze_results`` runs a DataFrame specialist over the stages' tables. The executor runs
in this process unless ``executor_factory(ws, runner)`` gives another (the durable one).
``ws.pipelines`` is then what surfaces use to decide checkpoints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from baton.llm.base import ChatModel
    from baton.workspace.core import Workspace


def stage_runner(ws: Workspace, model: ChatModel):
    """The runner of this workspace's stages (agents: its orchestrator and a DataFrame
    specialist); the DataFrame specialist is closed with the workspace."""
    from baton.pipeline import ANALYZE_RESULTS, QUERY_DATABASE, AgentStageRunner
    from baton.specialists.dataframe import DataFrameAgent

    analysis = ws.own(DataFrameAgent(name="analysis", model=model))
    return AgentStageRunner({QUERY_DATABASE: ws.orchestrator, ANALYZE_RESULTS: analysis})


def attach_planning(ws: Workspace, model: ChatModel, executor_factory: Callable[[Workspace, Any], Any] | None = None):
    from baton.pipeline import ANALYZE_RESULTS, QUERY_DATABASE, PipelineExecutor, Planner
    from baton.pipeline.planning import PipelinePlanning

    runner = stage_runner(ws, model)
    executor = executor_factory(ws, runner) if executor_factory is not None else PipelineExecutor(runner)
    planning = PipelinePlanning(Planner(model, tools=(QUERY_DATABASE, ANALYZE_RESULTS)), executor)
    ws.orchestrator.planning = planning
    ws.pipelines = planning
    return planning
