"""Baton: ask questions of your data through cooperating AI agents.

Everything a user needs comes from here::

    from baton import FunctionModel, LLMResponse, OrchestratorAgent, SQLAgent, SQLConnection, tool_call

the agents and the orchestrator, the specialists (SQL, DataFrame, knowledge, MCP), the models
and the public test doubles (``ScriptedModel``, ``FunctionModel``), the rich answer
(``AIMessage``), the ``Workspace`` and the errors. Subpackages keep the rest, each with its
own ``__all__`` (``baton.memory``, ``baton.pipeline``, ``baton.evaluation``, ``baton.viz``, ...).

``import baton`` imports nothing else and does nothing (no files, no connections, no
registries): each name loads its module on first use (PEP 562 ``__getattr__``), so a program
that only needs ``ScriptedModel`` never loads SQLAlchemy. Type checkers and IDEs read the
``TYPE_CHECKING`` imports below, which name the same objects as ``_EXPORTS`` (a test keeps
the two equal to ``__all__``). This package is below every layer of the design: no module of
Baton imports it.
"""

TYPE_CHECKING = False  # not typing's: importing typing would cost more than all of this module (type checkers know the idiom)
if TYPE_CHECKING:
    from typing import Any

    from baton.agents import AgentContext, AgentRegistry, AgentResult, AgentTool, BaseAgent, LexicalRouter, OrchestratorAgent
    from baton.errors import (
        AgentError,
        AgentFatalError,
        AgentRetryableError,
        AgentTimeoutError,
        AgentValidationError,
        AllProvidersFailedError,
        BatonError,
        ConfigurationError,
        ContextLengthExceededError,
        ProviderAuthError,
        ProviderBadRequestError,
        ProviderConnectionError,
        ProviderError,
        ProviderRateLimitError,
        ProviderServerError,
        ProviderTimeoutError,
        ScriptExhaustedError,
        ToolArgumentsError,
        ToolError,
        ToolExecutionError,
        UnknownToolError,
    )
    from baton.events import Event, RecordingTracker
    from baton.llm import (
        Anthropic,
        ChatModel,
        FunctionModel,
        LLMRouter,
        ModelPreferences,
        OpenAICompatible,
        RetryPolicy,
        ScriptedModel,
        model_from_env,
        model_from_string,
        tool_call,
    )
    from baton.messages import LLMResponse, Message, Tool, ToolCall, ToolParameter
    from baton.response import AIMessage, QueryResult, ResponseType, SourceDocument
    from baton.specialists.dataframe import DataFrameAgent
    from baton.specialists.knowledge import KnowledgeAgent, KnowledgeIndex
    from baton.specialists.mcp import MCPAgent, MCPServerConfig
    from baton.specialists.sql import ConnectionOptions, Freshness, SQLAgent, SQLConnection, SQLExecutionError
    from baton.state.location import State
    from baton.tools import FunctionTool, ToolOutput, tool
    from baton.verified import Slot, VerifiedQuestion
    from baton.workspace import Workspace
    from baton.workspace.database import open_database_workspace

_EXPORTS: dict[str, str] = {
    # agents
    "AgentContext": "baton.agents", "AgentRegistry": "baton.agents", "AgentResult": "baton.agents",
    "AgentTool": "baton.agents", "BaseAgent": "baton.agents", "LexicalRouter": "baton.agents",
    "OrchestratorAgent": "baton.agents",
    # specialists
    "SQLAgent": "baton.specialists.sql", "SQLConnection": "baton.specialists.sql",
    "ConnectionOptions": "baton.specialists.sql", "SQLExecutionError": "baton.specialists.sql",
    "Freshness": "baton.specialists.sql",
    "DataFrameAgent": "baton.specialists.dataframe",
    "KnowledgeAgent": "baton.specialists.knowledge", "KnowledgeIndex": "baton.specialists.knowledge",
    "MCPAgent": "baton.specialists.mcp", "MCPServerConfig": "baton.specialists.mcp",
    "VerifiedQuestion": "baton.verified", "Slot": "baton.verified",
    # models and test doubles
    "ChatModel": "baton.llm", "ScriptedModel": "baton.llm", "FunctionModel": "baton.llm", "tool_call": "baton.llm",
    "OpenAICompatible": "baton.llm", "Anthropic": "baton.llm", "LLMRouter": "baton.llm", "RetryPolicy": "baton.llm",
    "ModelPreferences": "baton.llm", "model_from_string": "baton.llm", "model_from_env": "baton.llm",
    # messages, answers, tools, events
    "Message": "baton.messages", "ToolCall": "baton.messages", "Tool": "baton.messages",
    "ToolParameter": "baton.messages", "LLMResponse": "baton.messages",
    "AIMessage": "baton.response", "QueryResult": "baton.response", "SourceDocument": "baton.response",
    "ResponseType": "baton.response",
    "FunctionTool": "baton.tools", "ToolOutput": "baton.tools", "tool": "baton.tools",
    "Event": "baton.events", "RecordingTracker": "baton.events",
    # the workspace
    "Workspace": "baton.workspace", "open_database_workspace": "baton.workspace.database",
    "State": "baton.state.location",
    # errors
    "BatonError": "baton.errors", "ConfigurationError": "baton.errors", "AgentError": "baton.errors",
    "AgentRetryableError": "baton.errors", "AgentFatalError": "baton.errors", "AgentTimeoutError": "baton.errors",
    "AgentValidationError": "baton.errors", "ProviderError": "baton.errors", "ProviderRateLimitError": "baton.errors",
    "ProviderTimeoutError": "baton.errors", "ProviderServerError": "baton.errors",
    "ProviderConnectionError": "baton.errors", "ProviderAuthError": "baton.errors",
    "ProviderBadRequestError": "baton.errors", "ContextLengthExceededError": "baton.errors",
    "AllProvidersFailedError": "baton.errors", "ScriptExhaustedError": "baton.errors", "ToolError": "baton.errors",
    "ToolArgumentsError": "baton.errors", "UnknownToolError": "baton.errors", "ToolExecutionError": "baton.errors",
}

__all__ = [
    "AIMessage", "AgentContext", "AgentError", "AgentFatalError", "AgentRegistry", "AgentResult",
    "AgentRetryableError", "AgentTimeoutError", "AgentTool", "AgentValidationError",
    "AllProvidersFailedError", "Anthropic", "BaseAgent", "BatonError", "ChatModel", "ConfigurationError",
    "ConnectionOptions", "ContextLengthExceededError", "DataFrameAgent", "Event", "Freshness", "FunctionModel",
    "FunctionTool", "KnowledgeAgent", "KnowledgeIndex", "LLMResponse", "LLMRouter", "LexicalRouter",
    "MCPAgent", "MCPServerConfig", "Message", "ModelPreferences", "OpenAICompatible", "OrchestratorAgent",
    "ProviderAuthError", "ProviderBadRequestError", "ProviderConnectionError", "ProviderError",
    "ProviderRateLimitError", "ProviderServerError", "ProviderTimeoutError", "QueryResult",
    "RecordingTracker", "ResponseType", "RetryPolicy", "SQLAgent", "SQLConnection", "SQLExecutionError",
    "ScriptExhaustedError", "ScriptedModel", "Slot", "SourceDocument", "State", "Tool", "ToolArgumentsError",
    "ToolCall", "ToolError", "ToolExecutionError", "ToolOutput", "ToolParameter", "UnknownToolError",
    "VerifiedQuestion", "Workspace", "model_from_env", "model_from_string", "open_database_workspace",
    "tool", "tool_call",
]


def __getattr__(name: str) -> "Any":
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'baton' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
