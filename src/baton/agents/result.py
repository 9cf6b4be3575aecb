"""``AgentResult``: the typed result of one agent execution (seeds 000 and 002).

``result`` is the text the LLM sees (and what gets vectorized); ``ai_message`` is the full
rich answer, the side channel the orchestrator reads after its loop. Typed subclasses add
fields (``SQLAgentResult`` adds the query, rows and attempts).

``error_type`` names the failure for programs: the exception class when an agent raised
(``AgentRetryableError``, ``AgentTimeoutError``, ``KeyError``, ... as recorded by
``AgentTool``), or a specialist's own failure class when it returned an error itself (the
SQL specialist's ``unsafe_sql``, ``permission_denied``, ``model_not_configured``, ...).

``agent_id`` is seed 000's id of the agent that produced the result. Baton identifies an
agent by its name (the registry's keys, the orchestrator's specialists, the keys of a
synthesis's ``data``), so it is ``agent_name`` unless the agent sets its own: a result made
with an ``agent_name`` gets it at construction, and ``AgentTool`` fills both from the agent
it wraps when the agent left them empty. It comes last so positional construction keeps
its meaning.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

from baton.ids import random_hex
from baton.response import AIMessage

AgentStatus = Literal["success", "error", "no_result"]


@dataclass
class AgentResult:
    agent_name: str = ""
    task: str = ""
    status: AgentStatus = "success"
    result: str = ""
    ai_message: AIMessage | None = None
    error: str | None = None
    error_type: str | None = None
    token_usage: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    execution_time: float = 0.0
    timestamp: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    call_id: str | None = None
    parent_execution_id: str | None = None
    execution_id: str = field(default_factory=random_hex)
    agent_id: str = ""

    def __post_init__(self) -> None:
        if not self.agent_id:
            self.agent_id = self.agent_name

    @property
    def ok(self) -> bool:
        return self.status == "success"

    def to_text(self) -> str:
        """The text form (seed 000: used for vectorization and cross-pollination)."""
        return self.result if self.ok else f"Error: {self.error or self.status}"
