"""Authentication: an API key maps to exactly one workspace.

Keys are kept only as SHA-256 digests and compared in constant time. A request presents its
key as ``Authorization: Bearer <key>``, ``X-API-Key: <key>``, or the ``baton_key`` cookie the
page's login link sets. The workspace comes from the key, never from the request body, so a
key can't reach another workspace's agents, sessions or memory.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from typing import Annotated

from fastapi import Depends, HTTPException, Request

COOKIE = "baton_key"


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller: which workspace its key opens."""

    workspace: str
    key_id: str  # first characters of the key's digest, for logs; never the key


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    return "bt_" + secrets.token_urlsafe(24)


class ApiKeys:
    def __init__(self, keys: dict[str, str] | None = None) -> None:
        """``keys`` maps a plain key to its workspace (digested immediately)."""
        self._by_digest: dict[str, str] = {}
        for key, workspace in (keys or {}).items():
            self.add(key, workspace)

    def add(self, key: str, workspace: str) -> None:
        self._by_digest[digest(key)] = workspace

    def workspaces(self) -> set[str]:
        return set(self._by_digest.values())

    def resolve(self, key: str | None) -> Principal | None:
        if not key:
            return None
        wanted = digest(key)
        for known, workspace in self._by_digest.items():
            if hmac.compare_digest(known, wanted):
                return Principal(workspace, wanted[:8])
        return None


def presented_key(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.headers.get("x-api-key") or request.cookies.get(COOKIE)


def authenticate(request: Request) -> Principal:
    """FastAPI dependency: 401 without a valid key; the message never says which part was wrong."""
    key = presented_key(request)
    principal = request.app.state.keys.resolve(key)
    if principal is None:
        raise HTTPException(
            status_code=401,
            detail="missing or invalid API key" if key else "an API key is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return principal


Caller = Annotated[Principal, Depends(authenticate)]
"""Annotate a route parameter with this to require a key and receive the caller."""
