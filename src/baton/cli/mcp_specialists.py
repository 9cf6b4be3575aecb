"""MCP servers as specialists of a CLI workspace: the ``--mcp``/``--mcp-allow`` options that
``baton serve`` and ``baton mcp`` share, read into configurations (they become the spec's
``mcp``: ``baton.cli.specs.with_flags``; the assembly adds the specialists).
"""

from __future__ import annotations

import typer
from rich.console import Console

err = Console(stderr=True, soft_wrap=True)


def mcp_specialists(servers: list[str], allows: list[str]):
    """``--mcp NAME=COMMAND_OR_URL`` / ``--mcp-allow NAME=TOOL,...`` as configurations;
    a usage error (exit 2, said on stderr) when they do not fit together."""
    from baton.errors import ConfigurationError
    from baton.specialists.mcp import parse_mcp_options

    try:
        return parse_mcp_options(servers, allows)
    except ConfigurationError as exc:
        err.print(f"[red]MCP configuration error:[/red] {exc}")
        raise typer.Exit(2) from exc


McpOption = typer.Option([], "--mcp", help="An MCP server as a specialist: NAME=COMMAND_OR_URL (repeatable; needs --mcp-allow).")
McpAllowOption = typer.Option([], "--mcp-allow", help="The tools that server may be asked for: NAME=TOOL[,TOOL...] (required per --mcp).")
