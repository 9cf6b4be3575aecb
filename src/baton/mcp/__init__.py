"""Baton speaks MCP: a workspace as an MCP server, over stdio (``baton mcp``) and over
Streamable HTTP (``/mcp`` on ``baton serve``, behind the workspace's key).

A thin surface: every tool and resource adapts ``baton.workspace.Workspace``; nothing here
answers on its own. Importing this package starts nothing.
"""

from baton.mcp.http import MCPRouter, WorkspaceMCPApp, mcp_http_router, workspace_http_app
from baton.mcp.server import SCHEMA_URI, VERIFIED_URI, build_server
from baton.mcp.shapes import structured_answer
from baton.mcp.stdio import serve_stdio

__all__ = [
    "MCPRouter", "SCHEMA_URI", "VERIFIED_URI", "WorkspaceMCPApp", "build_server", "mcp_http_router", "serve_stdio",
    "structured_answer", "workspace_http_app",
]
