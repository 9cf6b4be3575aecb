"""MCP over Streamable HTTP, behind the workspace's API keys.

``workspace_http_app(workspace, keys)`` is an ASGI app serving one workspace's MCP server;
``mcp_http_router(workspaces, keys)`` serves several on one path, each request going to
the workspace its key opens (what ``baton serve`` mounts at ``/mcp``). Isolation is by
construction: each workspace has its own ``MCPServer`` whose handlers close over that
workspace only, and its own session manager, so a key reaches its workspace's tools,
sessions and memory and nothing else; an MCP session id from another workspace is simply
unknown (404).

Decisions written down here (the issue was silent):
- The key is read from ``Authorization: Bearer`` or ``X-API-Key`` only, never from the
  page's login cookie: a browser page must not be able to ride a logged-in visitor's cookie
  into the MCP endpoint. A missing or wrong key is a 401 (with ``WWW-Authenticate``)
  before anything reaches the MCP server, the same message whichever part was wrong.
- Every request is authenticated, not just the one that opened an MCP session: a revoked
  key stops working at once.
- The SDK's DNS-rebinding check (Host/Origin allowlist) is off: it guards servers without
  authentication, and here the bearer key, which a browser cannot attach cross-site
  without a CORS preflight this server never grants, is the guard. It would also refuse
  every host name a deployment is reached by.
- The SDK's session manager needs a running task group; the app starts it on its first
  request (or at ASGI lifespan startup when served on its own) in a task of its own, and
  ``aclose()`` stops it, cancelling questions still running. The app is closed with its
  workspace (``Workspace.own``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from baton.mcp.server import build_server

UNAUTHORIZED = {"missing": "an API key is required", "invalid": "missing or invalid API key"}


def presented_key(scope: dict[str, Any]) -> str | None:
    """The key of a request: ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}
    header = headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return headers.get("x-api-key") or None


async def resolve(keys: Any, key: str | None) -> Any:
    """The principal of ``key`` (a store lookup runs in a thread: it may be a database)."""
    if not key:
        return None
    if getattr(keys, "store", None) is not None:
        return await asyncio.to_thread(keys.resolve, key)
    return keys.resolve(key)


async def _respond(send: Any, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    from baton.public_errors import error_body  # here, not at import: only a refusal needs it

    body = json.dumps(error_body(detail)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


async def unauthorized(send: Any, key: str | None) -> None:
    await _respond(send, 401, UNAUTHORIZED["invalid" if key else "missing"], [(b"www-authenticate", b"Bearer")])


class WorkspaceMCPApp:
    """One workspace's MCP endpoint (module docstring). ``serve`` is for a caller that has
    authenticated the request already (the router); calling the app authenticates."""

    def __init__(self, workspace: Any, keys: Any, *, json_response: bool = False) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        self.workspace = workspace
        self.keys = keys
        self.server = build_server(workspace)
        self.server.streamable_http_app(json_response=json_response,
                                        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.manager = self.server.session_manager
        self._runner: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._closed = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        key = presented_key(scope)
        principal = await resolve(self.keys, key)
        if principal is None or principal.workspace != self.workspace.name:
            await unauthorized(send, key)
            return
        await self.serve(scope, receive, send)

    async def serve(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self._closed:
            await _respond(send, 503, "this MCP endpoint is shut down")
            return
        await self.start()
        await self.manager.handle_request(scope, receive, send)

    async def start(self) -> None:
        """Start the session manager on the running loop (once; later calls wait for it)."""
        if self._runner is None:
            self._ready, self._stop = asyncio.Event(), asyncio.Event()
            self._runner = asyncio.get_running_loop().create_task(self._run(), name=f"baton-mcp-http-{self.workspace.name}")
        assert self._ready is not None  # made with the runner
        ready_wait = asyncio.ensure_future(self._ready.wait())
        done, _ = await asyncio.wait({ready_wait, self._runner}, return_when=asyncio.FIRST_COMPLETED)
        if ready_wait not in done:
            ready_wait.cancel()
            self._runner.result()  # the manager failed to start: raise its error

    async def _run(self) -> None:
        assert self._ready is not None and self._stop is not None
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()

    async def aclose(self) -> None:
        """Stop the session manager (questions still running are cancelled). Twice is harmless."""
        self._closed = True
        runner, self._runner = self._runner, None
        if runner is None or runner.done():
            return
        assert self._stop is not None
        self._stop.set()
        try:
            await runner
        except Exception:
            pass

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


def workspace_http_app(workspace: Any, keys: Any, *, json_response: bool = False) -> WorkspaceMCPApp:
    """The MCP Streamable HTTP app of ``workspace``, for requests bearing one of its keys
    (``baton.workspace.ApiKeys``). Closed with the workspace."""
    app = WorkspaceMCPApp(workspace, keys, json_response=json_response)
    workspace.own(app)
    return app


class MCPRouter:
    """Several workspaces' MCP endpoints on one path: the key picks the workspace."""

    def __init__(self, workspaces: Any, keys: Any, *, json_response: bool = False) -> None:
        self.workspaces = workspaces
        self.keys = keys
        self.json_response = json_response
        self._apps: dict[str, WorkspaceMCPApp] = {}

    def app_for(self, workspace: Any) -> WorkspaceMCPApp:
        app = self._apps.get(workspace.name)
        if app is None or app.workspace is not workspace:
            app = self._apps[workspace.name] = workspace_http_app(workspace, self.keys, json_response=self.json_response)
        return app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        key = presented_key(scope)
        principal = await resolve(self.keys, key)
        if principal is None or principal.workspace not in self.workspaces.names():
            await unauthorized(send, key)
            return
        await self.app_for(self.workspaces.get(principal.workspace)).serve(scope, receive, send)

    async def aclose(self) -> None:
        apps, self._apps = list(self._apps.values()), {}
        await asyncio.gather(*(app.aclose() for app in apps))


def mcp_http_router(workspaces: Any, keys: Any, *, json_response: bool = False) -> MCPRouter:
    """One ASGI app serving every workspace's MCP endpoint, by key (module docstring)."""
    return MCPRouter(workspaces, keys, json_response=json_response)
