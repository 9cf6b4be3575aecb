"""Authentication over HTTP: an API key maps to exactly one workspace (``baton.state.keys``).

A request presents its key as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``; the
page presents its login cookie instead, which holds a session token, never the key
(``login_routes.py``). The workspace comes from the key, never from the request body, so a
key can't reach another workspace's agents, sessions or memory.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from baton.errors import StartupRefusal
from baton.server.login_routes import session_principal
from baton.state.keys import ApiKeys, Principal, digest, new_key

__all__ = ["ApiKeys", "Caller", "Principal", "authenticate", "check_key_workspaces", "digest", "new_key", "presented_key"]


def check_key_workspaces(named: set[str], served: set[str]) -> None:
    """Refuse to start when keys name workspaces this server does not serve (a typo in
    ``BATON_API_KEYS`` would otherwise be a key that fails every request)."""
    unknown = named - served
    if "" in unknown:  # an entry with no '=workspace' (or nothing after it)
        raise StartupRefusal("an entry of BATON_API_KEYS names no workspace",
                             f"write each as key=workspace, comma-separated (this server serves {', '.join(sorted(served))})")
    if unknown:
        raise StartupRefusal(f"the API keys (BATON_API_KEYS) name workspaces this server does not serve: {', '.join(sorted(unknown))}",
                             f"name one of {', '.join(sorted(served))} after each key's '=' (key=workspace,...)")


def presented_key(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.headers.get("x-api-key")


async def authenticate(request: Request) -> Principal:
    """FastAPI dependency: 401 without a valid key; the message never says which part was wrong.
    A coroutine on purpose: FastAPI runs a plain-function dependency in a worker thread, a
    thread hop per request for a dictionary lookup."""
    key = presented_key(request)
    if key is None:  # the page: its login cookie names a session (login_routes.py)
        principal = await session_principal(request)
        if principal is not None:
            return principal
    keys = request.app.state.keys
    decided, principal = keys.resolve_local(key)
    if not decided:  # a key kept in the state store: a query, on its own small bulkhead
        principal = await request.app.state.key_lookups.run(keys.resolve, key)
    if principal is not None and principal.workspace not in request.app.state.workspaces.names():
        principal = None  # a stored key of a workspace this server does not serve
    if principal is None:
        raise HTTPException(
            status_code=401,
            detail="missing or invalid API key" if key else "an API key is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return principal


Caller = Annotated[Principal, Depends(authenticate)]
"""Annotate a route parameter with this to require a key and receive the caller."""
