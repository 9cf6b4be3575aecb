"""Agents: the request context, the base agent, typed results, agents as tools, the registry
and the orchestrator."""

from baton.agents.base import BaseAgent
from baton.agents.context import AgentContext
from baton.agents.execution_memory import ExecutionMemory
from baton.agents.result import AgentResult

__all__ = ["AgentContext", "AgentResult", "BaseAgent", "ExecutionMemory"]
