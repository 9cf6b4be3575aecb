"""What can go wrong when Baton calls an MCP server's tools, as types.

Each failure has its own class so a program (and ``AgentResult.error_type``) can tell a
refused tool from a slow server from a server that answered nonsense. Which ones the
orchestrator's ``AgentTool`` retries follows from the base class:

- ``MCPServerUnavailableError`` (retryable): the server could not be reached or the
  connection dropped; another attempt reconnects.
- ``MCPTimeoutError`` (fatal): the server had its whole timeout and did not answer. Not
  retried, so a hung server costs one timeout per question, not three.
- ``MCPAuthenticationError``, ``MCPToolNotAllowedError``, ``MCPToolArgumentsError``,
  ``MCPResultError``, ``MCPProtocolError``, ``MCPToolError`` (fatal): trying again sends
  the same thing.
"""

from __future__ import annotations

from typing import Any

from baton.errors import AgentError, AgentFatalError, AgentRetryableError


class MCPSpecialistError(AgentError):
    """Base of every failure of an MCP specialist. ``server`` names the configured server,
    ``tool`` the tool when one was being called."""

    def __init__(self, message: str, *, server: str = "", tool: str = "") -> None:
        super().__init__(message)
        self.server = server
        self.tool = tool


class MCPServerUnavailableError(MCPSpecialistError, AgentRetryableError):
    """The server could not be started or reached, or the connection closed mid-call."""


class MCPAuthenticationError(MCPSpecialistError, AgentFatalError):
    """An HTTP server refused the credentials (401 or 403): the configured headers are
    missing, wrong or not allowed there. ``status`` is the HTTP status."""

    def __init__(self, message: str, *, server: str = "", tool: str = "", status: int | None = None) -> None:
        super().__init__(message, server=server, tool=tool)
        self.status = status


class MCPTimeoutError(MCPSpecialistError, AgentFatalError):
    """Connecting, listing tools or one tool call took longer than its timeout."""


class MCPToolNotAllowedError(MCPSpecialistError, AgentFatalError):
    """A tool outside the specialist's allowlist was asked for; nothing was sent."""


class MCPToolArgumentsError(MCPSpecialistError, AgentFatalError):
    """Arguments that are not a JSON object, do not match the tool's input schema, or are
    over the size limit; nothing was sent."""


class MCPToolError(MCPSpecialistError, AgentFatalError):
    """The server ran the tool and reported a failure (``isError``). ``text`` and
    ``structured`` keep what it said."""

    def __init__(self, message: str, *, server: str = "", tool: str = "", text: str = "", structured: Any = None) -> None:
        super().__init__(message, server=server, tool=tool)
        self.text = text
        self.structured = structured


class MCPResultError(MCPSpecialistError, AgentFatalError):
    """The server's result is malformed (structured content that is not a JSON object,
    content blocks of no known shape) or over the size limit."""


class MCPProtocolError(MCPSpecialistError, AgentFatalError):
    """The server answered with a JSON-RPC error (an unknown method, invalid params, an
    internal error). ``code`` is the JSON-RPC error code."""

    def __init__(self, message: str, *, server: str = "", tool: str = "", code: int | None = None) -> None:
        super().__init__(message, server=server, tool=tool)
        self.code = code
