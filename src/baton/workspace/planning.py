"""Multi-step questions in a workspace: the planner, the stage runner, the executor.

``attach_planning(ws, model)`` gives the workspace's orchestrator a planner and an
executor: each ``query_database`` stage goes back through the orchestrator, which routes
it to the right specialist (stages carry ``_skip_complexity``, so they never plan again);
``analyze_results`` runs a DataFrame specialist over the stages' tables. The executor runs
in this process unless ``executor_factory(ws, runner)`` gives another (``durable_pipelines``:
DBOS, in this process or in ``baton worker``s). ``ws.pipelines`` is then the service
surfaces use to start, follow and decide runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.llm.base import ChatModel
    from baton.pipeline.planning import PipelinePlanning
    from baton.pipeline.runners import AgentStageRunner
    from baton.workspace.core import Workspace


def stage_runner(ws: Workspace, model: ChatModel) -> AgentStageRunner:
    """The runner of this workspace's stages (agents: its orchestrator and a DataFrame
    specialist); the DataFrame specialist is closed with the workspace."""
    from baton.pipeline import ANALYZE_RESULTS, QUERY_DATABASE, AgentStageRunner
    from baton.specialists.dataframe import DataFrameAgent

    analysis = ws.own(DataFrameAgent(name="analysis", model=model))
    return AgentStageRunner({QUERY_DATABASE: ws.orchestrator, ANALYZE_RESULTS: analysis})


def attach_planning(ws: Workspace, model: ChatModel, executor_factory: Callable[[Workspace, Any], Any] | None = None) -> PipelinePlanning:
    """Give ``ws`` a planner and an executor; ``ws.pipelines`` becomes the service surfaces
    use (``baton.workspace.pipelines``)."""
    from baton.llm.scoped import ScopedModel
    from baton.pipeline import ANALYZE_RESULTS, QUERY_DATABASE, PipelineExecutor, Planner
    from baton.pipeline.planning import PipelinePlanning
    from baton.workspace.pipelines import LocalPipelines

    runner = stage_runner(ws, model)
    planner = Planner(ScopedModel(model), tools=(QUERY_DATABASE, ANALYZE_RESULTS))  # the question's retry/timeout policy
    if executor_factory is None:
        planning = PipelinePlanning(planner, PipelineExecutor(runner))
        ws.pipelines = LocalPipelines(planning)
    else:
        service = executor_factory(ws, runner)
        planning = PipelinePlanning(planner, service)
        service.planner = planner
        ws.pipelines = service
    ws.orchestrator.planning = planning
    return planning


def durable_pipelines(host: Any) -> Callable[[Workspace, Any], Any]:
    """The executor factory of durable pipelines on ``host`` (a ``PipelineHost``): the
    workspace's stages are registered with the host, its runs go through DBOS."""
    from baton.workspace.pipelines import DurablePipelines

    def factory(ws: Workspace, runner: Any) -> DurablePipelines:
        host.register(ws.name, runner)
        return DurablePipelines(ws.name, host)

    return factory
