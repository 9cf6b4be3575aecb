"""MCP over stdio: one workspace, one client (a desktop assistant, an IDE) that started us.

The SDK diverts file descriptor 1 to stderr while it serves, so a stray ``print`` or a
child process's output cannot corrupt the protocol; Baton's own logs go to stderr anyway.
"""

from __future__ import annotations

from typing import Any

from baton.mcp.server import build_server


async def serve_stdio(workspace: Any) -> None:
    """Serve ``workspace`` over stdin/stdout until the client closes stdin. The caller
    owns (and closes) the workspace."""
    await build_server(workspace).run_stdio_async()
