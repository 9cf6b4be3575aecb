"""Small real agents for tests: they compute their answers, nothing is mocked."""

from __future__ import annotations

import asyncio

from baton.agents import AgentContext, AgentResult, BaseAgent
from baton.errors import AgentFatalError, AgentRetryableError, AgentTimeoutError
from baton.response import AIMessage


class TableAgent(BaseAgent):
    """Answers with its own rows (rich content), tagged with its name and the question."""

    def __init__(self, name: str, rows: list[dict] | None = None, **kw) -> None:
        super().__init__(name, f"Finance data for {name}", **kw)
        self.rows = rows if rows is not None else [{"unit": name, "revenue": len(name)}]

    async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
        await asyncio.sleep(0)
        data = [dict(r, question=question) for r in self.rows]
        message = AIMessage(content=f"{self.name}: {len(data)} rows", data=data, metadata={"source": self.name})
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message,
                           token_usage={"input_tokens": 1})


class TextAgent(BaseAgent):
    """Answers with text only (no rich content)."""

    async def run(self, context, *, question, **kw):
        return AgentResult(agent_name=self.name, task=question, result=f"{self.name} says: {question}",
                           ai_message=AIMessage(content=f"{self.name} says: {question}"))


class FlakyAgent(BaseAgent):
    """Raises the given errors in turn, then answers. Records each context it saw."""

    def __init__(self, name: str, errors: list[BaseException]) -> None:
        super().__init__(name, "flaky")
        self.errors = list(errors)
        self.seen: list[AgentContext] = []

    async def run(self, context, *, question, **kw):
        self.seen.append(context)
        if self.errors:
            raise self.errors.pop(0)
        return AgentResult(agent_name=self.name, result="finally", ai_message=AIMessage(content="finally", data=[{"ok": 1}]))


__all__ = ["TableAgent", "TextAgent", "FlakyAgent", "AgentFatalError", "AgentRetryableError", "AgentTimeoutError"]
