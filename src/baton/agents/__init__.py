"""Agents: the request context, the base agent, typed results, agents as tools, the registry
and the orchestrator. (The orchestrator is imported on first use so that the lighter parts
do not pull in the loop.)"""

from typing import Any

from baton.agents.base import BaseAgent
from baton.agents.context import AgentContext
from baton.agents.execution_memory import ExecutionMemory
from baton.agents.registry import AgentRegistry, UnknownAgentError
from baton.agents.result import AgentResult

__all__ = [
    "AgentContext", "AgentRegistry", "AgentResult", "AgentTool", "BaseAgent", "ExecutionMemory",
    "OrchestratorAgent", "UnknownAgentError", "MAX_SUB_AGENT_RETRIES",
]


def __getattr__(name: str) -> Any:
    if name in ("AgentTool", "MAX_SUB_AGENT_RETRIES"):
        from baton.agents import agent_tool

        return getattr(agent_tool, name)
    if name == "OrchestratorAgent":
        from baton.agents.orchestrator import OrchestratorAgent

        return OrchestratorAgent
    raise AttributeError(name)
