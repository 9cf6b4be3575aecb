"""Isolation at the memory API: who may touch which workspace.

Every ``MemoryStore`` method takes a ``WorkspaceScope``, and the only way to get one is
``MemoryStore.open(credential)``, which asks the store's ``Authenticator``. There is no
``workspace="..."`` parameter anywhere a caller (or a prompt-injected agent) could point at
someone else's memory; a scope issued by one store is refused by every other store.
Moving knowledge between workspaces is an explicit exported artifact (``transfer.py``).

Authenticators:
- ``TokenAuthenticator({token: workspace})``: bearer tokens (the default; an unknown token
  raises ``WorkspaceAccessError``).
- ``TrustedAuthenticator()``: accepts a ``Principal`` the host application already
  authenticated (the server's request auth, or the CLI operator who holds the database
  file). Opt in explicitly: it trusts whoever constructs the Principal.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from baton.memory.errors import WorkspaceAccessError

_WORKSPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}\Z")


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: the workspace it acts in, and who it is (for provenance)."""

    workspace: str
    user_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.workspace, str) or not _WORKSPACE_NAME.match(self.workspace):
            raise WorkspaceAccessError(f"invalid workspace name {self.workspace!r}")


class Authenticator(Protocol):
    def authenticate(self, credential: Any) -> Principal: ...


class TokenAuthenticator:
    def __init__(self, tokens: Mapping[str, str | Principal]):
        self._tokens = {t: (p if isinstance(p, Principal) else Principal(p)) for t, p in tokens.items()}

    def authenticate(self, credential: Any) -> Principal:
        if isinstance(credential, str):
            for token, principal in self._tokens.items():
                if hmac.compare_digest(token.encode(), credential.encode()):
                    return principal
        raise WorkspaceAccessError("unknown memory credential")


class TrustedAuthenticator:
    def authenticate(self, credential: Any) -> Principal:
        if isinstance(credential, Principal):
            return credential
        raise WorkspaceAccessError("TrustedAuthenticator accepts only a Principal from the host application")


class WorkspaceScope:
    """Proof that the caller was authenticated for one workspace of one store.

    Not constructible directly; ``MemoryStore.open`` issues it. Immutable."""

    __slots__ = ("_principal", "_issuer")
    _principal: Principal  # both set once, by issue()
    _issuer: object

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("obtain a WorkspaceScope from MemoryStore.open(credential)")

    @classmethod
    def issue(cls, principal: Principal, issuer: object) -> WorkspaceScope:
        """A scope for ``principal`` issued by ``issuer``: what ``MemoryStore.open`` calls
        once its authenticator has accepted the credential. A scope is only as good as
        the check before this call, so nothing else calls it."""
        scope = object.__new__(cls)
        object.__setattr__(scope, "_principal", principal)
        object.__setattr__(scope, "_issuer", issuer)
        return scope

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("WorkspaceScope is immutable")

    @property
    def workspace(self) -> str:
        return self._principal.workspace

    @property
    def principal(self) -> Principal:
        return self._principal

    @property
    def issuer(self) -> object:
        """The store that issued this scope (``MemoryStore.of(scope)`` returns it checked)."""
        return self._issuer

    def __repr__(self) -> str:
        return f"WorkspaceScope(workspace={self.workspace!r})"
