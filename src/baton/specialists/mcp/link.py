"""``MCPLink``: one live connection to an MCP server, shared by the requests of a specialist.

The SDK's ``Client`` must be entered and left in the same task (its task group and the
stdio child process live there), while requests come from many tasks. So the link runs
one background task that holds the client open until ``aclose()``; requests call tools on
it concurrently. Decisions:

- Connecting is lazy (the first question), bounded by ``connect_timeout``, and done again
  after the connection broke (the server exited, the HTTP stream failed) or when the event
  loop changed (a notebook's second ``asyncio.run``): a crashed server costs one failed
  question, not every later one.
- Every call has a timeout: the SDK's per-request timeout (which also sends the server a
  ``notifications/cancelled``), and an outer deadline a few seconds later in case the
  transport itself wedges.
- SDK and transport failures become the typed errors of ``errors.py`` here, in one place.
- The tool list is read once per connection (all pages, up to ``MAX_TOOL_PAGES``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from baton.specialists.mcp.config import MCPServerConfig
from baton.specialists.mcp.errors import (
    MCPAuthenticationError,
    MCPProtocolError,
    MCPResultError,
    MCPServerUnavailableError,
    MCPTimeoutError,
)

log = logging.getLogger(__name__)

MAX_TOOL_PAGES = 20
DEADLINE_GRACE_S = 5.0
_REQUEST_TIMEOUT = -32001  # mcp_types.REQUEST_TIMEOUT
_CONNECTION_CLOSED = -32000  # mcp_types.CONNECTION_CLOSED

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class _Connection:
    """One client held open by its own task."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.client: Any = None
        self.tools: list[Any] = []
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.broken: BaseException | None = None

    @property
    def alive(self) -> bool:
        return self.broken is None and self.task is not None and not self.task.done()


class MCPLink:
    """The connection to one configured server (module docstring)."""

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self._connection: _Connection | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._refused: int | None = None  # the last HTTP 401/403, while it explains a failure

    def __repr__(self) -> str:
        return f"MCPLink({self.config.name!r}, {self.config.transport}: {self.config.where!r})"

    # --- connecting ------------------------------------------------------------------------

    def _transport(self) -> tuple[Any, Callable[[], Awaitable[None]] | None]:
        """What ``mcp.Client`` connects through, and how to release what we opened for it."""
        cfg = self.config
        if cfg.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async def note_refusal(response: Any) -> None:  # the SDK reports a 401 as a bare "error response"
                if response.status_code in (401, 403):
                    self._refused = response.status_code

            http = httpx2.AsyncClient(headers=dict(cfg.headers), timeout=httpx2.Timeout(30.0, read=300.0),
                                      event_hooks={"response": [note_refusal]})
            return streamable_http_client(cfg.url, http_client=http), http.aclose
        from mcp import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=cfg.command[0], args=list(cfg.command[1:]),
                                       env=dict(cfg.env) if cfg.env is not None else None, cwd=cfg.cwd)
        errlog, close = _stderr()
        return stdio_client(params, errlog=errlog), close

    async def _hold(self, connection: _Connection, ready: asyncio.Future[None]) -> None:
        from mcp import Client

        release: Callable[[], Awaitable[None]] | None = None
        try:
            server, release = self._transport()
            async with Client(server, read_timeout_seconds=self.config.connect_timeout,
                              client_info=_client_info()) as client:
                connection.tools = await _all_tools(client)
                connection.client = client
                if not ready.done():
                    ready.set_result(None)
                await connection.stop.wait()
        except BaseException as exc:
            connection.broken = exc
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else MCPServerUnavailableError(
                    f"connection to {self.config.name!r} ended", server=self.config.name))
            if not isinstance(exc, Exception):
                raise
            log.info("MCP server %s: connection ended: %r", self.config.name, exc)
        finally:
            if release is not None:
                with contextlib.suppress(Exception):
                    await release()

    def _lock_now(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def connection(self) -> _Connection:
        """The live connection, connecting (again) when there is none on this loop."""
        loop = asyncio.get_running_loop()
        current = self._connection
        if current is not None and current.alive and current.loop is loop:
            return current
        async with self._lock_now():
            current = self._connection
            if current is not None and current.alive and current.loop is loop:
                return current
            if current is not None and current.loop is loop:
                await _stop(current)
            fresh = _Connection(loop)
            ready: asyncio.Future[None] = loop.create_future()
            fresh.task = loop.create_task(self._hold(fresh, ready), name=f"baton-mcp-{self.config.name}")
            try:
                async with asyncio.timeout(self.config.connect_timeout + DEADLINE_GRACE_S):
                    await asyncio.shield(ready)
            except TimeoutError:
                await _stop(fresh)
                raise MCPTimeoutError(f"MCP server {self.config.name!r} did not finish connecting within "
                                      f"{self.config.connect_timeout:g}s", server=self.config.name) from None
            except asyncio.CancelledError:
                await _stop(fresh)
                raise
            except Exception as exc:
                await _stop(fresh)
                raise self._typed(exc, "connecting") from exc
            self._connection = fresh
            return fresh

    async def tools(self) -> list[Any]:
        """The server's tools (``mcp.types.Tool``), as listed when this connection opened."""
        return list((await self.connection()).tools)

    # --- calling ---------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float | None = None,
                   progress: Progress | None = None) -> Any:
        """Call ``tool`` and return the SDK's ``CallToolResult``; typed errors otherwise."""
        limit = timeout or self.config.call_timeout
        connection = await self.connection()
        try:
            async with asyncio.timeout(limit + DEADLINE_GRACE_S):
                return await connection.client.call_tool(tool, arguments, read_timeout_seconds=limit,
                                                         progress_callback=progress)
        except TimeoutError:
            connection.broken = connection.broken or TimeoutError("transport wedged")  # reconnect next time
            raise MCPTimeoutError(f"{tool!r} on {self.config.name!r} did not answer within {limit:g}s",
                                  server=self.config.name, tool=tool) from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = self._typed(exc, f"calling {tool!r}", tool=tool, limit=limit)
            if isinstance(error, MCPServerUnavailableError):
                connection.broken = connection.broken or exc
            raise error from exc

    def _typed(self, exc: BaseException, doing: str, *, tool: str = "", limit: float | None = None) -> Exception:
        """An SDK or transport failure as one of our types."""
        from mcp import MCPError

        name = self.config.name
        refused, self._refused = self._refused, None
        if refused is not None:
            return MCPAuthenticationError(f"MCP server {name!r} refused the credentials while {doing} (HTTP {refused}): "
                                          "check the headers configured for it", server=name, tool=tool, status=refused)
        if isinstance(exc, (MCPAuthenticationError, MCPTimeoutError, MCPServerUnavailableError, MCPProtocolError, MCPResultError)):
            return exc
        if isinstance(exc, MCPError):
            if exc.code == _REQUEST_TIMEOUT:
                waited = f" within {limit:g}s" if limit else ""
                return MCPTimeoutError(f"MCP server {name!r} did not answer {doing}{waited}", server=name, tool=tool)
            if exc.code == _CONNECTION_CLOSED:
                return MCPServerUnavailableError(f"MCP server {name!r} closed the connection while {doing}", server=name, tool=tool)
            return MCPProtocolError(f"MCP server {name!r} answered {doing} with error {exc.code}: {_short(exc.message)}",
                                    server=name, tool=tool, code=exc.code)
        if isinstance(exc, ValidationError):
            return MCPResultError(f"MCP server {name!r} sent a malformed result {doing}: {_short(_first_error(exc))}",
                                  server=name, tool=tool)
        if isinstance(exc, RuntimeError) and "structured content" in str(exc).lower():
            return MCPResultError(f"MCP server {name!r}: {_short(str(exc))}", server=name, tool=tool)
        if isinstance(exc, BaseExceptionGroup):
            inner = exc.exceptions[0] if exc.exceptions else exc
            return self._typed(inner, doing, tool=tool, limit=limit) if inner is not exc else MCPServerUnavailableError(
                f"MCP server {name!r} failed while {doing}", server=name, tool=tool)
        return MCPServerUnavailableError(f"MCP server {name!r} ({self.config.transport}: {self.config.where}) failed while "
                                         f"{doing}: {type(exc).__name__}: {_short(str(exc))}", server=name, tool=tool)

    async def aclose(self) -> None:
        """Close the connection (the stdio child exits). A later call connects again."""
        current, self._connection = self._connection, None
        if current is not None and current.loop is asyncio.get_running_loop():
            await _stop(current)


async def _stop(connection: _Connection) -> None:
    connection.stop.set()
    task = connection.task
    if task is None or task.done():
        return
    try:
        async with asyncio.timeout(5.0):
            await asyncio.shield(task)
    except (TimeoutError, Exception):
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


async def _all_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return tools


def _stderr() -> tuple[Any, Callable[[], Awaitable[None]] | None]:
    """Where the server's stderr goes: ours, when it is a real file. A notebook's or a test
    runner's ``sys.stderr`` often has no file descriptor, and a child process needs one; then
    the process's original stderr, else the null device."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream, None
        except (AttributeError, OSError, ValueError):
            continue
    sink = open(os.devnull, "w")

    async def close() -> None:
        sink.close()

    return sink, close


def _client_info() -> Any:
    from mcp import Implementation

    return Implementation(name="baton", version="0.1.0")


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    return f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg', '')}"


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
