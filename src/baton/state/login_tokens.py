"""Login sessions of the web page: the browser's cookie holds a random token, never the API key.

``POST /login`` exchanges a key for a token (``issue``); every later request of the page
presents the token, which names the workspace and the key it was made from; ``POST /logout``
revokes it (``revoke``). Kept in the state database, beside the API keys
(``keystore.KeyStore``: ``$BATON_HOME/state.sqlite`` or the PostgreSQL state URL), so every
replica and every worker process accepts a token any of them issued, and a restarted server
keeps its visitors logged in.

Table ``baton_login_sessions``: the SHA-256 digest of each token (a stolen copy of the
table opens nothing), its workspace, the digest of the key it was made from, when it was
made, when it expires, when it was revoked.

Decisions (the issue was silent):

- A token lives ``TTL_S`` (14 days) from login, then the page asks for the key again; the
  cookie's Max-Age says the same, so the browser forgets it then too.
- A token is only as good as its key: when the key is revoked (``baton keys revoke``), every
  token made from it stops working (the caller checks the key digest, ``ApiKeys.resolve_digest``).
- Lookups are cached in the process for ``CACHE_S`` (5 s), so a page's burst of requests is
  one state read; a logout here is seen here at once, by other replicas within ``CACHE_S``.
- Expired rows are deleted when new tokens are issued (at most once an hour per process),
  so the table does not grow with every login ever made.
- ``LoginTokens.in_memory()`` is for an app built in code without a state store (tests, a
  notebook): tokens then live as long as the process.
"""

from __future__ import annotations

import datetime as dt
import enum
import secrets
import threading
import time
from typing import Final, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from baton.state.keys import digest
from baton.state.migrations import Migration, migrate

TTL_S = 14 * 24 * 3600
CACHE_S = 5.0
CACHE_ENTRIES = 10_000
PURGE_EVERY_S = 3600.0


class _Miss(enum.Enum):
    """``cached``'s "not in this process's cache" (an enum member, so ``is MISS`` narrows)."""

    MISS = "miss"


MISS: Final = _Miss.MISS

_md = sa.MetaData()
TOKENS = sa.Table(
    "baton_login_sessions", _md,
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("workspace", sa.String(200), nullable=False),
    sa.Column("key_digest", sa.String(64), nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),  # seconds since the epoch
    sa.Column("revoked_at", sa.String(40), nullable=True),
)


def _create_v1(conn: Connection) -> None:
    TOKENS.create(conn, checkfirst=True)


MIGRATIONS = [Migration(1, "login sessions", _create_v1)]


class LoginTokens:
    """Issue, look up and revoke the page's login tokens (module docstring)."""

    def __init__(self, engine: Engine, *, owns_engine: bool = False, ttl_s: float = TTL_S, cache_s: float = CACHE_S) -> None:
        self.engine = engine
        self.ttl_s = ttl_s
        self.cache_s = cache_s
        self._owns_engine = owns_engine
        self._cache: dict[str, tuple[float, tuple[str, str] | None]] = {}
        self._lock = threading.Lock()
        self._purged = 0.0
        migrate(engine, "login_sessions", MIGRATIONS)

    @classmethod
    def in_memory(cls, **kwargs: float) -> LoginTokens:
        from baton.memory.engine import make_engine

        return cls(make_engine("sqlite://"), owns_engine=True, **kwargs)

    @classmethod
    def open(cls, url: str, **kwargs: float) -> LoginTokens:
        from baton.memory.engine import make_engine

        return cls(make_engine(url), owns_engine=True, **kwargs)

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()

    def issue(self, workspace: str, key_digest: str) -> str:
        """A new token for a visitor who presented the key whose digest is ``key_digest``."""
        token = "bs_" + secrets.token_urlsafe(32)
        now = time.time()
        with self.engine.connect().execution_options(baton_write=True) as conn, conn.begin():
            conn.execute(TOKENS.insert().values(digest=digest(token), workspace=workspace, key_digest=key_digest,
                                                created_at=_iso(now), expires_at=now + self.ttl_s))
            if now - self._purged > PURGE_EVERY_S:
                self._purged = now
                conn.execute(TOKENS.delete().where(TOKENS.c.expires_at < now - 24 * 3600))
        return token

    def cached(self, token: str | None) -> tuple[str, str] | None | Literal[_Miss.MISS]:
        """What ``lookup`` would say, from this process's cache only; ``MISS`` when it must
        read the state (so an async caller reads it off the event loop)."""
        if not token or len(token) > 200:
            return None
        with self._lock:
            entry = self._cache.get(digest(token))
        return entry[1] if entry is not None and entry[0] > time.monotonic() else MISS

    def lookup(self, token: str | None) -> tuple[str, str] | None:
        """(workspace, key digest) of a live token, else None."""
        if not token or len(token) > 200:
            return None
        wanted = digest(token)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(wanted)
        if cached is not None and cached[0] > now:
            return cached[1]
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(TOKENS.c.workspace, TOKENS.c.key_digest).where(
                TOKENS.c.digest == wanted, TOKENS.c.revoked_at.is_(None), TOKENS.c.expires_at > time.time())).first()
        found = (row[0], row[1]) if row else None
        with self._lock:
            if len(self._cache) >= CACHE_ENTRIES:
                self._cache.clear()
            self._cache[wanted] = (now + self.cache_s, found)
        return found

    def revoke(self, token: str | None) -> bool:
        """Log this token out (here at once; other processes within ``cache_s``)."""
        if not token or len(token) > 200:
            return False
        wanted = digest(token)
        with self._lock:
            self._cache.pop(wanted, None)
        with self.engine.connect().execution_options(baton_write=True) as conn, conn.begin():
            result = conn.execute(TOKENS.update().where(TOKENS.c.digest == wanted, TOKENS.c.revoked_at.is_(None))
                                  .values(revoked_at=_iso(time.time())))
        return result.rowcount > 0


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat()
