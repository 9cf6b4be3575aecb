"""``AgentContext``: the one object a request carries down to every agent (seed 002).

It is frozen: a sub-agent never modifies the context it was given; it derives a new one
(``derive``) for anything it calls and returns typed results instead. Everything that
belongs to one request (its tracker, its execution memory, its ids) lives here, never on an
agent instance, so one agent object serves many concurrent requests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from baton.events import NULL_TRACKER, Event, WorkflowTracker
from baton.ids import random_hex
from baton.llm.base import ChatModel
from baton.messages import Message

if TYPE_CHECKING:
    from baton.agents.execution_memory import ExecutionMemory

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _new_id() -> str:
    return random_hex()


@dataclass(frozen=True, slots=True)
class AgentContext:
    """Per-request state: the question, who asks, which model, where events go.

    ``llm_router`` is the model for this request (an ``LLMRouter`` or any ``ChatModel``);
    provider/model preferences flow user -> project -> app defaults when it is built.
    ``extra`` carries flags such as ``_skip_complexity``, pipeline actions and session ids.
    """

    user_question: str = ""
    project_id: str = "default"
    workspace: str = "default"
    chat_history: tuple[Message, ...] = ()
    llm_router: ChatModel | None = None
    tracker: WorkflowTracker = NULL_TRACKER
    workflow_id: str = field(default_factory=_new_id)
    user_id: str | None = None
    preferred_provider: str | None = None
    model: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    execution_memory: ExecutionMemory | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.extra, MappingProxyType):
            object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))
        if not isinstance(self.chat_history, tuple):
            object.__setattr__(self, "chat_history", tuple(self.chat_history))

    def derive(self, **changes: Any) -> AgentContext:
        """A copy with ``changes`` applied (``extra`` given as a dict is merged, not replaced)."""
        if "extra" in changes:
            changes["extra"] = {**self.extra, **changes["extra"]}
        return dataclasses.replace(self, **changes)

    def emit(self, event: Event) -> None:
        """Send one event to this request's tracker, stamped with the request's workflow id
        when it carries none."""
        if event.workflow_id is None:
            event.workflow_id = self.workflow_id
        self.tracker.emit(event)
