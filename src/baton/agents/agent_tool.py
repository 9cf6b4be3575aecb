"""``AgentTool``: an agent exposed to an LLM as a tool (seed 000 side channel, seed 002 retry).

The LLM protocol is string-based, so the tool returns only text to the model; the full
``AgentResult`` (with the specialist's whole ``AIMessage``) is recorded in the request's
``ExecutionMemory`` — reached through the request's context, never stored on this object —
and also handed back as the ``ToolOutput`` payload.

Retry (seed 002 "Sub-agent retry"): up to ``MAX_SUB_AGENT_RETRIES`` more attempts after the
first, on a failed result validation and on ``AgentRetryableError``; ``AgentTimeoutError``
is retried with a smaller context (half the chat history); ``AgentFatalError`` is never
retried. A result the agent itself returns with ``status="error"`` is final: an agent that
wants another try raises ``AgentRetryableError``. Every failure becomes a typed
``AgentResult(status="error", error_type=...)``, an exception also with its
``metadata["error_code"]`` (``baton.agents.failures``); the LLM sees a short error text.
A model call that failed inside the specialist is NOT retried here: the model-call policy
(``baton.llm.policy``) already retried it.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from baton.agents.base import BaseAgent
from baton.agents.context import AgentContext
from baton.agents.failures import code_of, retry_after_of
from baton.agents.result import AgentResult
from baton.errors import AgentFatalError, AgentRetryableError, AgentTimeoutError, AgentValidationError
from baton.events import AgentEnd, AgentRetry, AgentRouted, AgentStart
from baton.messages import Tool, ToolCall, ToolParameter
from baton.tools.base import ToolOutput

MAX_SUB_AGENT_RETRIES = 2
MAX_TEXT_FOR_LLM = 6000  # characters of a specialist's answer shown to the routing model

Validator = Callable[[AgentResult], list[str]]  # returns the problems found; empty = passed


def tool_name_for(name: str) -> str:
    """A provider-safe tool name (letters, digits, ``_`` and ``-``, at most 64 chars)."""
    return (re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_") or "agent")[:64]


def default_validator(agent: BaseAgent) -> Validator:
    """The agent's own ``validate_result`` (``BaseAgent.validate_result``: by default, a
    success with no text and no rich answer fails)."""
    return agent.validate_result


class AgentTool:
    """Wraps ``agent`` as an LLM tool taking ``question`` and optional ``context``.

    Configuration only: ``bind(context)`` makes the per-request callable the loop runs.
    """

    def __init__(
        self,
        agent: BaseAgent,
        *,
        tool_name: str | None = None,
        description: str | None = None,
        validator: Validator | None = None,
        max_retries: int = MAX_SUB_AGENT_RETRIES,
        timeout: float | None = None,
        sequential_only: bool = False,
    ) -> None:
        self.agent = agent
        self.name = tool_name_for(tool_name or agent.name)
        self.spec = Tool(
            name=self.name,
            description=description or agent.description or f"Ask the {agent.name} specialist.",
            parameters=[
                ToolParameter("question", "string", "The question for this specialist, self-contained."),
                ToolParameter("context", "string", "Optional facts from earlier steps it needs.", required=False),
            ],
            sequential_only=sequential_only,
        )
        self.validator = validator or default_validator(agent)
        self.max_retries = max_retries
        self.timeout = timeout

    def bind(self, context: AgentContext) -> BoundAgentTool:
        return BoundAgentTool(self, context)

    async def execute(self, context: AgentContext, question: str, extra_context: str | None, call_id: str) -> AgentResult:
        """Run the agent with retry and validation; always returns a typed result."""
        started = time.perf_counter()
        context.emit(AgentRouted(agent=self.agent.name, tool=self.name, call_id=call_id, question=question))
        context.emit(AgentStart(agent=self.agent.name, call_id=call_id, question=question))
        result = await self._run_with_retry(context, question, extra_context)
        result.agent_name = result.agent_name or self.agent.name
        result.agent_id = result.agent_id or result.agent_name
        result.task = result.task or question
        result.execution_time = time.perf_counter() - started
        result.parent_execution_id = context.workflow_id
        if context.execution_memory is not None:
            context.execution_memory.record(call_id, result)
        else:
            result.call_id = call_id
        context.emit(AgentEnd(agent=self.agent.name, call_id=call_id, status=result.status, error_type=result.error_type,
                              duration_ms=round(result.execution_time * 1000, 3)))
        return result

    async def _run_with_retry(self, context: AgentContext, question: str, extra_context: str | None) -> AgentResult:
        kwargs: dict[str, Any] = {"question": question}
        if extra_context:
            kwargs["extra_context"] = extra_context  # not "context": that is run()'s first parameter
        run_context = context
        failure: tuple[str, str] = ("AgentError", "no attempt ran")
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                result = await self._run_once(run_context, kwargs)
                problems = self.validator(result) if result.status == "success" else []
                if not problems or last:
                    if problems:
                        result.metadata["validation_warnings"] = problems
                    result.metadata["attempts"] = attempt + 1
                    return result
                failure = ("AgentValidationError", "; ".join(problems))
            except AgentFatalError as exc:
                return self._error(question, exc, attempt + 1)
            except AgentTimeoutError as exc:
                failure = (type(exc).__name__, str(exc) or "timed out")
                run_context = _smaller(run_context, attempt + 1)
            except (AgentRetryableError, AgentValidationError) as exc:
                failure = (type(exc).__name__, str(exc))
            except Exception as exc:  # an agent bug must not take the request down: typed, not retried
                return self._error(question, exc, attempt + 1)
            context.emit(AgentRetry(agent=self.agent.name, attempt=attempt + 1, reason=failure[1], error_type=failure[0]))
        error_type, message = failure
        return AgentResult(
            agent_name=self.agent.name, task=question, status="error", error=f"failed after {self.max_retries + 1} attempts: {message}",
            error_type=error_type, metadata={"attempts": self.max_retries + 1},
        )

    async def _run_once(self, context: AgentContext, kwargs: dict[str, Any]) -> AgentResult:
        if self.timeout is None:
            return await self.agent.run(context, **kwargs)
        try:
            async with asyncio.timeout(self.timeout):
                return await self.agent.run(context, **kwargs)
        except TimeoutError as exc:
            raise AgentTimeoutError(f"{self.agent.name} took longer than {self.timeout}s") from exc

    def _error(self, question: str, exc: BaseException, attempts: int) -> AgentResult:
        metadata: dict[str, Any] = {"attempts": attempts, "error_code": code_of(exc)}
        retry_after = retry_after_of(exc)
        if retry_after is not None:
            metadata["retry_after_s"] = retry_after
        return AgentResult(
            agent_name=self.agent.name, task=question, status="error", error=str(exc) or type(exc).__name__,
            error_type=type(exc).__name__, metadata=metadata,
        )


def _smaller(context: AgentContext, level: int) -> AgentContext:
    """Halve the chat history for a retry after a timeout."""
    history = context.chat_history
    return context.derive(chat_history=history[len(history) // 2 :], extra={"_reduced_context": level})


def text_for_llm(result: AgentResult) -> str:
    """What the routing model reads: the answer, or a short typed error."""
    if result.ok:
        text = result.result or (result.ai_message.content if result.ai_message else "")
        warnings = result.metadata.get("validation_warnings")
        if warnings:
            text += "\n(warnings: " + "; ".join(warnings) + ")"
    elif result.status == "no_result":
        text = f"{result.agent_name} found nothing for this question."
    else:
        text = f"Error ({result.error_type or 'AgentError'}) from {result.agent_name}: {result.error}"
    if len(text) > MAX_TEXT_FOR_LLM:
        text = text[:MAX_TEXT_FOR_LLM] + f"\n[... {len(text) - MAX_TEXT_FOR_LLM} more characters cut]"
    return text


class BoundAgentTool:
    """An ``AgentTool`` bound to one request's context: what the loop calls."""

    __slots__ = ("agent_tool", "context", "spec")

    def __init__(self, agent_tool: AgentTool, context: AgentContext) -> None:
        self.agent_tool = agent_tool
        self.context = context
        self.spec = agent_tool.spec

    async def run_call(self, call: ToolCall) -> ToolOutput:
        """Answer one call of the routing model; the result is recorded under ``call.id``."""
        return await self._run(call.arguments, call.id or uuid.uuid4().hex)

    async def __call__(self, arguments: dict[str, Any]) -> ToolOutput:
        """Answer outside a loop (a fresh call id)."""
        return await self._run(arguments, uuid.uuid4().hex)

    async def _run(self, arguments: dict[str, Any], call_id: str) -> ToolOutput:
        question = str(arguments.get("question") or self.context.user_question)
        extra = arguments.get("context")
        result = await self.agent_tool.execute(self.context, question, str(extra) if extra else None, call_id)
        return ToolOutput(text=text_for_llm(result), payload=result, is_error=result.status == "error")
