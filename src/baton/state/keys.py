"""API keys: a key opens exactly one workspace, and ``Principal`` is who asks.

Keys are kept only as SHA-256 digests and compared in constant time. The workspace comes
from the key, never from a request, so a key can't reach another workspace's agents,
sessions or memory. Surfaces (the HTTP server) read the key from the request and call
``resolve``; nothing here knows about HTTP.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any


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
    def __init__(self, keys: dict[str, str] | None = None, *, store: Any = None) -> None:
        """``keys`` maps a plain key to its workspace (digested immediately). ``store`` (a
        ``keystore.KeyStore``) is asked for any other key, so keys another replica created
        work here at once, and a revoked one stops working at once."""
        self._by_digest: dict[str, str] = {}
        self.store = store
        for key, workspace in (keys or {}).items():
            self.add(key, workspace)

    def add(self, key: str, workspace: str) -> None:
        self.add_digest(digest(key), workspace)

    def add_digest(self, key_digest: str, workspace: str) -> None:
        self._by_digest[key_digest] = workspace

    def workspaces(self) -> set[str]:
        return set(self._by_digest.values())

    def resolve_local(self, key: str | None) -> tuple[bool, Principal | None]:
        """(decided, principal) from the keys held in memory, without asking the store:
        ``decided`` is False when only the store can say (``resolve`` then, off the event
        loop: it is a database query)."""
        if not key:
            return True, None
        found = self.resolve_digest(digest(key), store=False)
        return (True, found) if found is not None else (self.store is None, None)

    def resolve(self, key: str | None) -> Principal | None:
        return self.resolve_digest(digest(key)) if key else None

    def resolve_digest(self, key_digest: str | None, *, store: bool = True) -> Principal | None:
        """The caller a key opens, from the key's digest (a login session keeps only that):
        None once the key is revoked or unknown. ``store=False``: the keys held in memory only."""
        if not key_digest:
            return None
        found = None
        for known, workspace in self._by_digest.items():
            if hmac.compare_digest(known, key_digest):
                found = Principal(workspace, key_digest[:8])
        if found is None and store and self.store is not None:
            workspace = self.store.workspace_of(key_digest)  # looked up by digest: the index compares, not us
            found = Principal(workspace, key_digest[:8]) if workspace is not None else None
        return found

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def __len__(self) -> int:
        return len(self._by_digest)
