"""A workspace at run time: its orchestrator, its conversations, its memory and pipelines.

The server holds one ``Workspace`` per name and hands a request only the one its API key
opens (``Workspaces.for_principal``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from baton.agents.orchestrator import OrchestratorAgent
from baton.server.auth import Principal
from baton.server.sessions import SessionStore


@dataclass
class Workspace:
    name: str
    orchestrator: OrchestratorAgent
    sessions: SessionStore = field(default_factory=SessionStore)
    memory: Any = None  # this workspace's baton.memory.MemoryStore, when configured
    pipelines: Any = None  # paused pipeline runs by workflow id, when configured
    description: str = ""


    def memory_scope(self):
        """The memory scope of this workspace: opened for the workspace the caller's key
        maps to (the store trusts the server's authentication), never a name from a request."""
        from baton.memory import Principal

        return self.memory.open(Principal(self.name))


class Workspaces:
    def __init__(self, workspaces: list[Workspace] | None = None) -> None:
        self._by_name = {w.name: w for w in workspaces or ()}

    def add(self, workspace: Workspace) -> None:
        self._by_name[workspace.name] = workspace

    def for_principal(self, principal: Principal) -> Workspace:
        return self._by_name[principal.workspace]

    def names(self) -> set[str]:
        return set(self._by_name)

    def __iter__(self):
        return iter(self._by_name.values())
