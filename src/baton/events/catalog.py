"""Every kind of event Baton emits: one dataclass each, ``TYPE`` its discriminator, its
fields the payload (``base.py`` says how they reach the wire). Construct with keywords:
``context.emit(AgentStart(agent="sql", call_id="c1", question="..."))``.

``EVENT_TYPES`` maps each ``TYPE`` to its class: a literal table, so reading an event never
depends on which modules happen to be imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from baton.events.base import Event, omitted_when_none

# --- the model calls (baton.loop) -------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class LLMStart(Event):
    TYPE: ClassVar[str] = "llm.start"
    iteration: int
    messages: int
    prompt_tokens: int
    tools: int
    stream: bool


@dataclass(slots=True, kw_only=True)
class LLMEnd(Event):
    TYPE: ClassVar[str] = "llm.end"
    iteration: int
    usage: dict[str, int]
    model: str
    provider: str
    duration_ms: float
    finish_reason: str
    tool_calls: int


@dataclass(slots=True, kw_only=True)
class LLMError(Event):
    """A model call failed; ``streamed_deltas`` tokens of it were already streamed (void)."""

    TYPE: ClassVar[str] = "llm.error"
    iteration: int
    error_type: str
    message: str
    retryable: bool
    streamed_deltas: int
    duration_ms: float


@dataclass(slots=True, kw_only=True)
class LLMToken(Event):
    TYPE: ClassVar[str] = "llm.token"
    iteration: int
    delta: str


# --- the loop's context pressure and guards ----------------------------------------------------


@dataclass(slots=True, kw_only=True)
class LoopTrimmed(Event):
    TYPE: ClassVar[str] = "loop.trimmed"
    iteration: int
    removed_messages: int
    tokens_before: int
    tokens_after: int
    context_window: int
    fits: bool


@dataclass(slots=True, kw_only=True)
class LoopWrapUp(Event):
    TYPE: ClassVar[str] = "loop.wrap_up"
    iteration: int
    prompt_tokens: int
    context_window: int


@dataclass(slots=True, kw_only=True)
class LoopCompressed(Event):
    TYPE: ClassVar[str] = "loop.compressed"
    iteration: int
    removed_messages: int
    shortened_results: int
    tokens_before: int
    tokens_after: int
    context_window: int
    fits: bool
    error: str


@dataclass(slots=True, kw_only=True)
class LoopRefund(Event):
    TYPE: ClassVar[str] = "loop.refund"
    iteration: int
    refunds: int
    max_refunds: int
    error_type: str
    message: str
    exhausted: bool
    wait_s: float


@dataclass(slots=True, kw_only=True)
class LoopMaxIterations(Event):
    TYPE: ClassVar[str] = "loop.max_iterations"
    iteration: int
    max_iterations: int
    tool_calls: int


# --- tool calls (baton.loop.dispatch) ----------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class ToolStart(Event):
    TYPE: ClassVar[str] = "tool.start"
    name: str
    call_id: str
    iteration: int
    arguments: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class ToolEnd(Event):
    TYPE: ClassVar[str] = "tool.end"
    name: str
    call_id: str
    iteration: int
    is_error: bool
    duration_ms: float
    error_type: str | None


# --- the orchestrator and its specialists (baton.agents) ---------------------------------------


@dataclass(slots=True, kw_only=True)
class WorkflowStart(Event):
    TYPE: ClassVar[str] = "workflow.start"
    agent: str
    session_id: str | None
    question: str


@dataclass(slots=True, kw_only=True)
class WorkflowEnd(Event):
    TYPE: ClassVar[str] = "workflow.end"
    agent: str
    status: str
    mode: str | None


@dataclass(slots=True, kw_only=True)
class AgentRouted(Event):
    TYPE: ClassVar[str] = "agent.routed"
    agent: str
    tool: str
    call_id: str
    question: str


@dataclass(slots=True, kw_only=True)
class AgentStart(Event):
    TYPE: ClassVar[str] = "agent.start"
    agent: str
    call_id: str
    question: str


@dataclass(slots=True, kw_only=True)
class AgentRetry(Event):
    TYPE: ClassVar[str] = "agent.retry"
    agent: str
    attempt: int
    reason: str
    error_type: str


@dataclass(slots=True, kw_only=True)
class AgentEnd(Event):
    TYPE: ClassVar[str] = "agent.end"
    agent: str
    call_id: str
    status: str
    error_type: str | None
    duration_ms: float


# --- what specialists do -----------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class SQLAttempt(Event):
    """One SQL candidate checked and (when safe) run."""

    TYPE: ClassVar[str] = "sql.attempt"
    sql: str
    attempt: int
    outcome: str
    error_class: str | None
    row_count: int | None
    duration_ms: float | None
    connection_id: str


@dataclass(slots=True, kw_only=True)
class KnowledgeRetrieval(Event):
    TYPE: ClassVar[str] = "knowledge.retrieval"
    agent: str
    hits: int
    mode: str
    sources: list[str]
    duration_ms: float


@dataclass(slots=True, kw_only=True)
class KnowledgeAnswerStart(Event):
    TYPE: ClassVar[str] = "knowledge.answer.start"
    agent: str
    sources: int
    model: str


@dataclass(slots=True, kw_only=True)
class MCPCallStart(Event):
    TYPE: ClassVar[str] = "mcp.call.start"
    agent: str
    server: str
    tool: str


@dataclass(slots=True, kw_only=True)
class MCPProgress(Event):
    TYPE: ClassVar[str] = "mcp.progress"
    agent: str
    server: str
    tool: str
    progress: float
    total: float | None
    message: str


@dataclass(slots=True, kw_only=True)
class MCPCallEnd(Event):
    """``structured`` (whether the tool returned structured content) only on success."""

    TYPE: ClassVar[str] = "mcp.call.end"
    agent: str
    server: str
    tool: str
    error_type: str | None
    structured: bool | None = omitted_when_none()
    duration_ms: float


# --- pipelines (baton.pipeline) ----------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class StageStart(Event):
    TYPE: ClassVar[str] = "stage.start"
    stage_id: str
    tool: str
    question: str


@dataclass(slots=True, kw_only=True)
class StageEnd(Event):
    TYPE: ClassVar[str] = "stage.end"
    stage_id: str
    status: str
    rows: int | None
    duration_ms: float | None


@dataclass(slots=True, kw_only=True)
class StageFailed(Event):
    TYPE: ClassVar[str] = "stage.failed"
    stage_id: str
    reason: str | None
    error_type: str | None


@dataclass(slots=True, kw_only=True)
class StageSkipped(Event):
    TYPE: ClassVar[str] = "stage.skipped"
    stage_id: str
    reason: str | None


@dataclass(slots=True, kw_only=True)
class StageCheckpoint(Event):
    TYPE: ClassVar[str] = "stage.checkpoint"
    stage_id: str | None
    rows: int | None


@dataclass(slots=True, kw_only=True)
class PipelineComplete(Event):
    TYPE: ClassVar[str] = "pipeline.complete"
    status: str
    stages: list[dict[str, Any]]


@dataclass(slots=True, kw_only=True)
class PipelinePlan(Event):
    TYPE: ClassVar[str] = "pipeline.plan"
    attempt: int
    stages: list[str]
    usage: dict[str, int]


@dataclass(slots=True, kw_only=True)
class PipelinePlanInvalid(Event):
    TYPE: ClassVar[str] = "pipeline.plan_invalid"
    attempt: int
    problems: list[str]


@dataclass(slots=True, kw_only=True)
class PipelineStatus(Event):
    """A durable run's status changed (``baton.workspace.pipelines``)."""

    TYPE: ClassVar[str] = "pipeline.status"
    status: str | None


# --- answering (baton.workspace) ---------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class Followup(Event):
    """The question was answered as a follow-up of the previous answer, without a model."""

    TYPE: ClassVar[str] = "followup"
    kind: str | None
    session_id: str


EVENT_TYPES: dict[str, type[Event]] = {cls.TYPE: cls for cls in (
    LLMStart, LLMEnd, LLMError, LLMToken,
    LoopTrimmed, LoopWrapUp, LoopCompressed, LoopRefund, LoopMaxIterations,
    ToolStart, ToolEnd,
    WorkflowStart, WorkflowEnd, AgentRouted, AgentStart, AgentRetry, AgentEnd,
    SQLAttempt, KnowledgeRetrieval, KnowledgeAnswerStart, MCPCallStart, MCPProgress, MCPCallEnd,
    StageStart, StageEnd, StageFailed, StageSkipped, StageCheckpoint,
    PipelineComplete, PipelinePlan, PipelinePlanInvalid, PipelineStatus,
    Followup,
)}
