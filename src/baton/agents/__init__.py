"""Agents: the request context, the base agent, typed results, agents as tools, the registry
and the orchestrator."""

from baton.agents.agent_tool import MAX_SUB_AGENT_RETRIES, AgentTool
from baton.agents.base import BaseAgent
from baton.agents.context import AgentContext
from baton.agents.execution_memory import ExecutionMemory
from baton.agents.lexical_routing import LexicalRouter
from baton.agents.orchestrator import OrchestratorAgent
from baton.agents.registry import AgentRegistry, UnknownAgentError
from baton.agents.result import AgentResult

__all__ = [
    "AgentContext", "AgentRegistry", "AgentResult", "AgentTool", "BaseAgent", "ExecutionMemory",
    "LexicalRouter", "MAX_SUB_AGENT_RETRIES", "OrchestratorAgent", "UnknownAgentError",
]
