"""Where an MCP server is and what Baton may call on it.

``MCPServerConfig`` is one server: a command to start (stdio) or a URL (Streamable HTTP),
and the allowlist of tool names the specialist may call. ``parse_mcp_options`` reads the
command line's ``--mcp NAME=COMMAND_OR_URL`` and ``--mcp-allow NAME=TOOL,TOOL`` pairs.

Decisions written down here (the issue was silent):
- The allowlist is required and never empty: an MCP server can add tools at any time
  (``tools/list_changed``), and a specialist that calls whatever a server lists would call
  a tool nobody reviewed. A server named with ``--mcp`` but no ``--mcp-allow`` is refused at
  start, before anything is spawned.
- ``COMMAND_OR_URL`` is a URL when it starts with a scheme (``https://``; only http and
  https are accepted), otherwise a command line split like a POSIX shell would (no shell
  runs it).
- A stdio server gets the SDK's default environment (``HOME``, ``PATH``, ``USER``, ...),
  not Baton's: API keys and database passwords in Baton's environment stay out of a
  third-party process unless passed in ``env`` on purpose.
- HTTP ``headers`` (an API key for the remote server) are kept out of ``repr``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from baton.errors import ConfigurationError

DEFAULT_CALL_TIMEOUT_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 20.0
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


@dataclass(frozen=True)
class MCPServerConfig:
    """One MCP server. Exactly one of ``command`` (argv, stdio) and ``url`` (Streamable
    HTTP) is set; ``allowed_tools`` names the tools Baton may call there."""

    name: str
    allowed_tools: tuple[str, ...]
    command: tuple[str, ...] = ()
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    env: Mapping[str, str] | None = field(default=None, repr=False)
    cwd: str | None = None
    call_timeout: float = DEFAULT_CALL_TIMEOUT_S
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name or ""):
            raise ConfigurationError(f"MCP server name {self.name!r}: use letters, digits, _ and - (starting with a letter)")
        object.__setattr__(self, "allowed_tools", tuple(dict.fromkeys(str(t).strip() for t in self.allowed_tools if str(t).strip())))
        if not self.allowed_tools:
            raise ConfigurationError(f"MCP server {self.name!r} needs an allowlist of tool names (allowed_tools / --mcp-allow)")
        if bool(self.command) == bool(self.url):
            raise ConfigurationError(f"MCP server {self.name!r}: give either a command or a URL")
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ConfigurationError(f"MCP server {self.name!r}: {self.url!r} is not an http(s) URL")
        if self.headers and self.url is None:
            raise ConfigurationError(f"MCP server {self.name!r}: headers are for HTTP servers")
        for label in ("call_timeout", "connect_timeout"):
            value = getattr(self, label)
            if not (isinstance(value, (int, float)) and 0 < value < float("inf")):
                raise ConfigurationError(f"MCP server {self.name!r}: {label} must be a positive number of seconds")

    @property
    def transport(self) -> str:
        return "http" if self.url is not None else "stdio"

    @property
    def where(self) -> str:
        """The URL, or the command's program: what logs and errors may show (no headers)."""
        return self.url if self.url is not None else self.command[0]

    @classmethod
    def of(cls, name: str, server: str | Sequence[str], allowed_tools: Sequence[str], **options) -> MCPServerConfig:
        """From a URL, a command line (split like a shell would) or an argv list."""
        if isinstance(server, str):
            text = server.strip()
            if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text):  # a URL; only http(s) passes __post_init__
                return cls(name, tuple(allowed_tools), url=text, **options)
            try:
                argv = tuple(shlex.split(text))
            except ValueError as exc:
                raise ConfigurationError(f"MCP server {name!r}: cannot read the command {server!r}: {exc}") from exc
            return cls(name, tuple(allowed_tools), command=argv, **options)
        return cls(name, tuple(allowed_tools), command=tuple(str(a) for a in server), **options)


def _pair(option: str, value: str) -> tuple[str, str]:
    name, sep, rest = value.partition("=")
    name = name.strip()
    if not sep or not name or not rest.strip():
        raise ConfigurationError(f"{option} takes NAME=VALUE, got {value!r}")
    return name, rest.strip()


def parse_mcp_options(servers: Sequence[str], allows: Sequence[str], **options) -> list[MCPServerConfig]:
    """``--mcp NAME=COMMAND_OR_URL`` and ``--mcp-allow NAME=TOOL,TOOL`` as configurations
    (one per server, in the order given). A server without an allowlist, an allowlist for a
    server not given, or a name given twice is a ``ConfigurationError``."""
    targets: dict[str, str] = {}
    for value in servers:
        name, target = _pair("--mcp", value)
        if name in targets:
            raise ConfigurationError(f"--mcp names {name!r} twice")
        targets[name] = target
    allowed: dict[str, list[str]] = {}
    for value in allows:
        name, tools = _pair("--mcp-allow", value)
        if name not in targets:
            raise ConfigurationError(f"--mcp-allow names {name!r}, which no --mcp gives")
        allowed.setdefault(name, []).extend(t.strip() for t in tools.split(",") if t.strip())
    missing = [name for name in targets if not allowed.get(name)]
    if missing:
        raise ConfigurationError(
            f"MCP server(s) {', '.join(missing)} need an allowlist: --mcp-allow {missing[0]}=TOOL[,TOOL...]")
    return [MCPServerConfig.of(name, target, allowed[name], **options) for name, target in targets.items()]
