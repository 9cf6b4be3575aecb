"""Live progress: typed events, their one wire form, and the trackers that receive them.

- ``Event`` (``base.py``): the base of every event; ``type`` is its discriminator, ``data`` its
  payload, ``to_dict()`` the wire form every surface sends (SSE, the OpenAI-compatible
  stream, MCP progress, the page, the bus, the durable log).
- One dataclass per kind of event (``catalog.py``): ``LLMStart``, ``SQLAttempt``,
  ``StageEnd``, ... ``EVENT_TYPES`` maps each discriminator to its class.
- ``read_event`` / ``event_of`` (``wire.py``): a wire dict (or a type and a payload) back
  to the typed event; ``RawEvent`` for one that does not make its type.
- Trackers (``trackers.py``): ``WorkflowTracker`` (the protocol), ``NullTracker``,
  ``RecordingTracker``, ``QueueTracker``, ``FanOutTracker``.
"""

from baton.events.base import Event, RawEvent, omitted_when_none, payload_fields
from baton.events.catalog import (
    EVENT_TYPES,
    AgentEnd,
    AgentRetry,
    AgentRouted,
    AgentStart,
    Followup,
    KnowledgeAnswerStart,
    KnowledgeRetrieval,
    LLMEnd,
    LLMError,
    LLMStart,
    LLMToken,
    LoopCompressed,
    LoopMaxIterations,
    LoopRefund,
    LoopTrimmed,
    LoopWrapUp,
    MCPCallEnd,
    MCPCallStart,
    MCPProgress,
    PipelineComplete,
    PipelinePlan,
    PipelinePlanInvalid,
    PipelineStatus,
    SQLAttempt,
    StageCheckpoint,
    StageEnd,
    StageFailed,
    StageSkipped,
    StageStart,
    ToolEnd,
    ToolStart,
    WorkflowEnd,
    WorkflowStart,
)
from baton.events.trackers import (
    NULL_TRACKER,
    FanOutTracker,
    NullTracker,
    QueueTracker,
    RecordingTracker,
    WorkflowTracker,
)
from baton.events.wire import event_of, read_event

__all__ = [
    "EVENT_TYPES", "NULL_TRACKER", "Event", "FanOutTracker", "NullTracker", "QueueTracker", "RawEvent",
    "RecordingTracker", "WorkflowTracker", "event_of", "omitted_when_none", "payload_fields", "read_event",
    "AgentEnd", "AgentRetry", "AgentRouted", "AgentStart", "Followup", "KnowledgeAnswerStart",
    "KnowledgeRetrieval", "LLMEnd", "LLMError", "LLMStart", "LLMToken", "LoopCompressed",
    "LoopMaxIterations", "LoopRefund", "LoopTrimmed", "LoopWrapUp", "MCPCallEnd", "MCPCallStart",
    "MCPProgress", "PipelineComplete", "PipelinePlan", "PipelinePlanInvalid", "PipelineStatus",
    "SQLAttempt", "StageCheckpoint", "StageEnd", "StageFailed", "StageSkipped", "StageStart",
    "ToolEnd", "ToolStart", "WorkflowEnd", "WorkflowStart",
]
