"""MCP servers as specialists of a CLI workspace: the ``--mcp``/``--mcp-allow`` options that
``baton serve``, ``baton mcp`` and the workers of ``baton serve --workers N`` share, read
into configurations and attached to a workspace's orchestrator. Kept apart from the
commands so that building an app (``serving.py``) and the ``baton mcp`` command (``mcp.py``,
which builds its workspace with ``serving.local_workspace``) import it one way.
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


def attach_mcp_specialists(workspace, configs, model=None) -> list:
    """Each configured MCP server as a specialist of ``workspace``'s orchestrator (its model:
    ``model``, else the request's), closed with the workspace. A name already taken by a
    specialist is a ``ConfigurationError``."""
    from baton.agents.agent_tool import tool_name_for
    from baton.errors import ConfigurationError
    from baton.specialists.mcp import MCPAgent

    agents = []
    for config in configs:
        if tool_name_for(config.name) in workspace.orchestrator.agent_tools:
            raise ConfigurationError(f"--mcp {config.name}: workspace {workspace.name!r} already has a specialist named so")
        agent = MCPAgent.from_config(config, model=model)
        workspace.orchestrator.add_agent(agent)
        workspace.own(agent)
        agents.append(agent)
    return agents


McpOption = typer.Option([], "--mcp", help="An MCP server as a specialist: NAME=COMMAND_OR_URL (repeatable; needs --mcp-allow).")
McpAllowOption = typer.Option([], "--mcp-allow", help="The tools that server may be asked for: NAME=TOOL[,TOOL...] (required per --mcp).")
