"""MCP servers as specialists: ``MCPAgent`` wraps one server's allowed tools (stdio command
or Streamable HTTP URL) and answers with them through its own model loop.

Importing this package starts nothing: the server is started (or reached) on first use.
"""

from baton.specialists.mcp.agent import MCPAgent
from baton.specialists.mcp.config import MCPServerConfig, parse_mcp_options
from baton.specialists.mcp.errors import (
    MCPAuthenticationError,
    MCPProtocolError,
    MCPResultError,
    MCPServerUnavailableError,
    MCPSpecialistError,
    MCPTimeoutError,
    MCPToolArgumentsError,
    MCPToolError,
    MCPToolNotAllowedError,
)
from baton.specialists.mcp.results import MCPCallOutcome

__all__ = [
    "MCPAgent", "MCPAuthenticationError", "MCPCallOutcome", "MCPProtocolError", "MCPResultError", "MCPServerConfig", "MCPServerUnavailableError",
    "MCPSpecialistError", "MCPTimeoutError", "MCPToolArgumentsError", "MCPToolError", "MCPToolNotAllowedError",
    "parse_mcp_options",
]
