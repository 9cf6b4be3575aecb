"""Where Baton keeps its state: SQLite files under ``BATON_HOME`` (the embedded default),
or one database URL that every process shares (``BATON_STATE_URL`` / ``--state``).

``State.from_settings(settings)`` takes ``BATON_STATE_URL`` (unset: embedded) and ``BATON_HOME``
(default ``~/.baton``) from a ``baton.settings.Settings``; ``State.from_env()`` builds that
from the environment. What lives where:

| part | embedded (no URL) | ``BATON_STATE_URL=postgresql://...`` |
|---|---|---|
| sessions (conversations, feedback) | ``$BATON_HOME/<workspace>/sessions.sqlite`` | tables ``baton_sessions`` ... |
| memory journal, insights | ``$BATON_HOME/<workspace>/memory.sqlite`` | tables ``baton_mem_*`` |
| API keys | ``$BATON_HOME/state.sqlite`` | table ``baton_api_keys`` |
| durable pipeline runs (DBOS) | ``$BATON_HOME/pipelines.sqlite`` | the ``dbos`` schema |
| live events across processes | in-process | ``LISTEN/NOTIFY`` on the same database |

Every table a workspace writes names the workspace, so many workspaces share one database.
Local files stay per machine either way: the demo's own database (built the same
everywhere) and caches such as a document index (rebuilt from the folder).

Every store creates and upgrades its tables with versioned migrations under a lock
(``migrations.py``); ``check_versions()`` refuses, before anything starts, a state any family
of which a newer Baton wrote (``versions.py``). So N replicas and M workers starting at
once on an empty database (or processes on an empty ``BATON_HOME``) install the schema once. ``startup_lock()``
serialises the rest of a start (building the demo, launching the pipeline runtime): a file
lock in ``BATON_HOME``, or a PostgreSQL advisory lock.
"""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.errors import ConfigurationError, StartupRefusal
from baton.settings import Settings
from baton.state.file_names import KEYS_FILE, LOCK_FILE, MEMORY_FILE, PIPELINES_FILE, SESSIONS_FILE
from baton.state.sessions import SessionStore
from baton.store_backends import backend_for_url

__all__ = ["KEYS_FILE", "LOCK_FILE", "MEMORY_FILE", "PIPELINES_FILE", "SESSIONS_FILE", "Place", "State", "baton_home",
           "normalise_url"]

if TYPE_CHECKING:
    from baton.state.keystore import KeyStore



def baton_home(env: Mapping[str, str] | None = None) -> Path:
    """``$BATON_HOME`` (default ``~/.baton``) of ``Settings.from_env(env)``."""
    return Settings.from_env(env).home


def normalise_url(url: str) -> str:
    """A PostgreSQL URL with the psycopg 3 driver (what Baton installs). SQLite is what the
    embedded default already is (files under ``BATON_HOME``), so a SQLite URL is refused
    rather than half-supported."""
    import sqlalchemy as sa

    try:
        parsed = sa.make_url(url)
    except Exception as exc:
        raise ConfigurationError(f"BATON_STATE_URL / --state is not a database URL: {exc}") from None
    backend = backend_for_url(parsed)
    if backend is not None and not backend.embedded:
        return backend.driver_url(parsed).render_as_string(hide_password=False)
    raise ConfigurationError(f"the state URL must be a PostgreSQL URL, got {parsed.get_backend_name()!r} "
                             "(for SQLite files, leave it unset and set BATON_HOME)")


@dataclass(frozen=True)
class Place:
    """One workspace's corner of the state."""

    state: State
    workspace: str
    directory: Path  # local folder: the embedded SQLite files, and caches

    def file(self, name: str) -> Path:
        """A local file of this workspace (a cache such as a document index)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory / name

    def sessions(self) -> SessionStore:
        return SessionStore(self.state.url or self.file(SESSIONS_FILE))

    def memory(self) -> Any:
        from baton.state.versions import open_memory

        return open_memory(self.state.url or f"sqlite:///{self.file(MEMORY_FILE)}")


@dataclass(frozen=True)
class State:
    home: Path
    url: str | None = None

    def __post_init__(self) -> None:
        if self.url is not None:
            object.__setattr__(self, "url", normalise_url(self.url))

    @classmethod
    def from_settings(cls, settings: Settings, *, url: str | None = None, home: str | Path | None = None) -> State:
        """``BATON_HOME`` and ``BATON_STATE_URL`` of ``settings``; ``url`` and ``home`` win."""
        return cls(Path(home).expanduser() if home is not None else settings.home, url or settings.state_url or None)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, url: str | None = None, home: str | Path | None = None) -> State:
        """``from_settings(Settings.from_env(env), url=url, home=home)``."""
        return cls.from_settings(Settings.from_env(env), url=url, home=home)

    @property
    def embedded(self) -> bool:
        return self.url is None

    def describe(self) -> str:
        """Where the state is, for people (no password)."""
        if self.url is None:
            return f"SQLite files in {self.home}"
        import sqlalchemy as sa

        return sa.make_url(self.url).render_as_string(hide_password=True)

    def check_versions(self) -> State:
        """Refuse to start (``StateSchemaError``: one line, exit 2) when any family of this
        state was written by a newer Baton (``versions``); returns ``self``."""
        import sqlalchemy as sa

        from baton.state.versions import check

        try:
            check(self)
        except sa.exc.OperationalError as exc:  # a server that does not answer: one line, not a driver traceback
            reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
            raise StartupRefusal(f"the state database {self.describe()} cannot be used ({reason})",
                                 "check --state / BATON_STATE_URL, and that its server runs") from None
        return self

    def place_for(self, workspace: str, *, folder: str | None = None, key: str | None = None) -> Place:
        """The place of ``workspace``; ``folder`` is its local folder under ``home``
        (default: the workspace's name)."""
        return Place(self, workspace, self.home / (folder or workspace))

    def keys(self) -> KeyStore:
        """The key store (``keystore.KeyStore``); the caller closes it."""
        from baton.state.keystore import KeyStore

        if self.url is None:
            self.home.mkdir(parents=True, exist_ok=True)
        return KeyStore.open(self.url or f"sqlite:///{self.home / KEYS_FILE}")

    @property
    def pipelines_url(self) -> str:
        """The system database of durable pipelines (DBOS)."""
        if self.url is None:
            self.home.mkdir(parents=True, exist_ok=True)
            return f"sqlite:///{self.home / PIPELINES_FILE}"
        return self.url

    @contextlib.contextmanager
    def startup_lock(self, name: str = "start") -> Iterator[None]:
        """Hold while starting (building, seeding, launching): one process at a time."""
        if self.url is None:
            import fcntl

            self.home.mkdir(parents=True, exist_ok=True)
            with open(self.home / LOCK_FILE, "a+") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)
            return
        import sqlalchemy as sa

        # Try-lock in autocommit, never a statement waiting on the lock: a waiting statement
        # holds a snapshot, and a CREATE INDEX CONCURRENTLY in the lock holder's migrations
        # (DBOS's) would wait for it: a deadlock no one detects.
        engine = sa.create_engine(self.url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")
        key = zlib.crc32(f"baton-startup:{name}".encode())
        try:
            with engine.connect() as conn:
                while not conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
                    time.sleep(0.1)
                try:
                    yield
                finally:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        finally:
            engine.dispose()
