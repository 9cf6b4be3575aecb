"""Multi-stage pipelines: plans executed by layer, checkpoints, a planner, durable runs.

In-process execution (``PipelineExecutor``) is the default and imports nothing heavy.
Durable execution on DBOS lives in ``baton.pipeline.durable`` and imports ``dbos`` only
when it is used; user code never imports DBOS.
"""

from baton.pipeline.errors import (
    CheckpointDecisionError,
    PipelineConfigurationError,
    PipelineError,
    PlanDefect,
    PlanValidationError,
)
from baton.pipeline.executor import InMemoryRunStore, PausedRun, PipelineExecutor, PipelineRun, RunStore
from baton.pipeline.models import (
    ANALYZE_RESULTS,
    QUERY_DATABASE,
    SEARCH_CODEBASE,
    STAGE_TOOLS,
    PlanStage,
    StageResult,
    StageValidation,
)
from baton.pipeline.plan import ExecutionPlan
from baton.pipeline.planner import Planner
from baton.pipeline.runners import AgentStageRunner, StageRunner
from baton.pipeline.state import CheckpointDecision, PipelineState

__all__ = [
    "ANALYZE_RESULTS", "QUERY_DATABASE", "SEARCH_CODEBASE", "STAGE_TOOLS",
    "AgentStageRunner", "CheckpointDecision", "CheckpointDecisionError", "ExecutionPlan",
    "InMemoryRunStore", "PausedRun", "PipelineConfigurationError", "PipelineError", "PipelineExecutor",
    "PipelineRun", "PipelineState", "PlanDefect", "PlanStage", "PlanValidationError", "Planner",
    "RunStore", "StageResult", "StageRunner", "StageValidation",
]
