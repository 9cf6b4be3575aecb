"""Executable tools: a ``Tool`` schema plus the code that answers it.

The loop dispatches a model's ``ToolCall`` to a ``RunnableTool``. What the model sees is
always a string; a tool may return a ``ToolOutput`` to also hand the program a typed payload
(the side channel seed 000 uses to keep a specialist's full answer).

A tool that needs to know *which* call it is answering (``AgentTool`` records each
specialist's result under its call id) implements ``CallAwareTool``: the loop then hands it
the whole ``ToolCall`` (a copy: id, name, arguments) instead of the arguments alone. The id
travels as an argument, not through a context variable.

Most tools are plain functions: ``@tool`` (or ``FunctionTool.from_function``) turns a typed,
documented function into a tool whose schema comes from its signature and docstring, whose
arguments are validated with pydantic, and whose body runs in a worker thread when it is
synchronous (``baton.tools.function``). ``FunctionTool(spec, fn)`` keeps working for a
hand-written ``Tool``/``ToolParameter`` spec.
"""

from baton.tools.base import CallAwareTool, RunnableTool, ToolOutput, signature_text
from baton.tools.function import FunctionTool, ToolFunction, tool

__all__ = ["CallAwareTool", "FunctionTool", "RunnableTool", "ToolFunction", "ToolOutput", "signature_text", "tool"]
