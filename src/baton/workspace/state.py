"""Where a workspace keeps its state: SQLite files under ``BATON_HOME`` (the embedded
default), or one database URL shared by every process (``BATON_STATE_URL``).

``State.from_env()`` reads ``BATON_STATE_URL`` (unset: embedded) and ``BATON_HOME``
(default ``~/.baton``). ``state.place_for(workspace, folder=...)`` gives one workspace's
``Place``: its session store and its memory store, and local files for caches.

Embedded layout (what the demo and ``--database`` workspaces have always used):
``$BATON_HOME/<folder>/sessions.sqlite`` and ``memory.sqlite``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from baton.workspace.sessions import SessionStore

SESSIONS_FILE = "sessions.sqlite"
MEMORY_FILE = "memory.sqlite"


def baton_home(env: Mapping[str, str] | None = None) -> Path:
    """``$BATON_HOME`` (default ``~/.baton``)."""
    env = os.environ if env is None else env
    return Path(env.get("BATON_HOME") or "~/.baton").expanduser()


@dataclass(frozen=True)
class Place:
    """One workspace's corner of the state."""

    state: State
    workspace: str
    directory: Path  # local folder for caches (and the embedded SQLite files)

    def file(self, name: str) -> Path:
        """A local file of this workspace (a cache such as a document index)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory / name

    def sessions(self) -> SessionStore:
        return SessionStore(self.file(SESSIONS_FILE))

    def memory(self) -> Any:
        from baton.memory import MemoryStore, TrustedAuthenticator

        return MemoryStore(f"sqlite:///{self.file(MEMORY_FILE)}", authenticator=TrustedAuthenticator())


@dataclass(frozen=True)
class State:
    home: Path
    url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, url: str | None = None, home: str | Path | None = None) -> State:
        env = os.environ if env is None else env
        return cls(Path(home).expanduser() if home is not None else baton_home(env), url or env.get("BATON_STATE_URL") or None)

    @property
    def embedded(self) -> bool:
        return self.url is None

    def place_for(self, workspace: str, *, folder: str | None = None, key: str | None = None) -> Place:
        """The place of ``workspace``; ``folder`` is its local folder under ``home``
        (default: the workspace's name)."""
        return Place(self, workspace, self.home / (folder or workspace))
