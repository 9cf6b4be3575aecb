"""LLM providers behind one async protocol, public test doubles, routing, windows, tokens."""

from baton.llm.base import ChatModel
from baton.llm.testing import FunctionModel, ScriptedModel, tool_call

__all__ = ["ChatModel", "FunctionModel", "ScriptedModel", "tool_call"]
