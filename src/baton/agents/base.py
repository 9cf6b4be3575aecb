"""``BaseAgent``: one abstract method, ``run(context, **kwargs) -> AgentResult``.

The single abstract method keeps the orchestrator ignorant of any sub-agent's internals
(seed 002). ``ask`` is the convenience a person or a notebook uses: it builds a context,
runs the agent and returns the rich answer.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any

from baton.agents.context import AgentContext
from baton.agents.failures import code_of_result
from baton.agents.result import AgentResult
from baton.errors import ConfigurationError
from baton.llm.base import ChatModel, is_language_model
from baton.llm.scoped import with_policy
from baton.messages import add_usage
from baton.response import AIMessage


class BaseAgent(ABC):
    """An agent. Subclasses set ``name``/``description`` (class attributes or arguments)
    and implement ``run``. Instances hold configuration only, never per-request state."""

    name: str = ""
    description: str = ""

    def __init__(self, name: str | None = None, description: str | None = None, *, model: ChatModel | None = None) -> None:
        if name is not None:
            self.name = name
        if description is not None:
            self.description = description
        if not self.name:
            self.name = type(self).__name__
        self.model = model

    def model_for(self, context: AgentContext) -> ChatModel:
        """This agent's own model if it was given one, else the request's, under the
        question's model-call policy when one is being answered. Routing stand-ins that are
        not language models (``baton.llm.base.RoutingStandIn``, e.g. ``LexicalRouter``)
        don't count."""
        model = self.model or context.llm_router
        if not is_language_model(model):
            raise ConfigurationError(
                f"agent {self.name!r} has no model: pass model=... or set BATON_MODEL (e.g. openai:gpt-4o-mini)"
            )
        assert model is not None
        return with_policy(model)  # inside a question: the one retry/timeout/deadline policy (baton.llm.policy)

    def has_model(self, context: AgentContext) -> bool:
        return is_language_model(self.model or context.llm_router)

    def validate_result(self, result: AgentResult) -> list[str]:
        """Seed 002 result validation, run by ``AgentTool`` on every successful result: the
        problems found (empty: passed); a non-empty list makes ``AgentTool`` retry. The
        default: a success with no text and no rich answer is empty. Specialists override it
        with their own checks (the SQL agent wants its query and rows)."""
        if result.status == "success" and not result.result and result.ai_message is None:
            return ["the agent returned an empty answer"]
        return []

    async def configure(self) -> None:  # noqa: B027  (an optional hook, not an abstract method)
        """Hook for one-time async set-up (connections, indexes). Called once by the
        registry before first use; the default does nothing."""

    @abstractmethod
    async def run(self, context: AgentContext, **kwargs: Any) -> AgentResult:
        """Do the work for one request and return a typed result. Never mutate ``context``."""

    async def ask(
        self,
        question: str,
        *,
        context: AgentContext | None = None,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        """Answer ``question`` and return the rich answer, stamped with the request's ids."""
        if context is None:
            context = AgentContext(user_question=question, llm_router=self.model)
        started = time.perf_counter()
        result = await self.run(context, question=question, **kwargs)
        message = result.ai_message
        if message is None:
            message = AIMessage(content=result.to_text())
        if result.status == "error":  # a failed run is an error answer, with its code
            message.fail(message.error_code or code_of_result(result.error_type, result.metadata),
                         message.error or result.error or result.error_type or "the agent failed")
        elif not result.ok:
            message.error = message.error or result.error
        message.input = question
        message.session_id = session_id if session_id is not None else message.session_id
        message.workflow_id = context.workflow_id
        if not message.token_usage:
            message.token_usage = add_usage({}, result.token_usage)
        message.metadata.setdefault("agent", self.name)
        message.metadata.setdefault("elapsed_ms", round((time.perf_counter() - started) * 1000, 3))
        return message
