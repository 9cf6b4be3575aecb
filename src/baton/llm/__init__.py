"""LLM providers behind one async protocol, public test doubles, routing, windows, tokens.

Importing this package imports no SDK: ``openai`` and ``anthropic`` load when a provider
is first constructed.
"""

from baton.llm.anthropic_provider import Anthropic
from baton.llm.base import ChatModel
from baton.llm.config import model_choice, model_from_env, model_from_string
from baton.llm.openai_compat import OpenAICompatible
from baton.llm.policy import RetryPolicy
from baton.llm.preferences import ModelPreferences
from baton.llm.router import LLMRouter
from baton.llm.testing import FunctionModel, ScriptedModel, tool_call
from baton.llm.windows import ContextWindowResolver, context_window, default_resolver

__all__ = [
    "Anthropic",
    "ChatModel",
    "ContextWindowResolver",
    "FunctionModel",
    "LLMRouter",
    "ModelPreferences",
    "OpenAICompatible",
    "RetryPolicy",
    "ScriptedModel",
    "context_window",
    "default_resolver",
    "model_choice",
    "model_from_env",
    "model_from_string",
    "tool_call",
]
