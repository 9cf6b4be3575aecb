"""API keys kept in the state database, so every replica accepts the same keys and a
workspace keeps its key across restarts.

Table ``baton_api_keys``: the SHA-256 digest of each key (the key itself is never needed to
check one), its workspace, a label, when it was created and revoked. ``default_key(ws)`` is
the key ``baton serve`` / ``baton demo`` print when ``BATON_API_KEYS`` is unset: created
once (by whichever process asks first; a process that loses the race reads the winner's),
then the same on every restart and every replica.

Decision: the default key is also kept in plain text (column ``printable``) so a restarted
server can print its login link again. Whoever can read the state database can already
read every conversation and memory the key protects, so this adds nothing to what that
database must be protected for; keys made with ``create`` are kept as digests only and
shown once.

Operators manage them with ``baton keys create|list|revoke`` (``baton.cli.keys``). A key is
named by a prefix of its digest, matched literally: ``%`` and ``_`` are not LIKE wildcards,
so no prefix reaches keys it does not start.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from baton.state.keys import digest, new_key
from baton.state.migrations import Migration, migrate

DEFAULT_LABEL = "default"
MIN_PREFIX = 8  # hex characters of a digest that name a key (the key id in logs is 8)
LABEL_LIMIT = 200

# the memory's rule for workspace names (baton.memory.access), matched in full: a name this
# refuses could never have memory or be served, so a key for it would only mislead
_WORKSPACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}")
_HEX = re.compile(r"[0-9a-f]+")


class KeyInputError(ValueError):
    """A workspace name, label or key id that cannot be used (the message says why)."""


def check_workspace(name: str) -> str:
    if not _WORKSPACE_NAME.fullmatch(name):
        raise KeyInputError(f"invalid workspace name {name[:60]!r}{'...' if len(name) > 60 else ''}: "
                            "letters, digits and . _ : @ / - (starting with a letter or digit), at most 200")
    return name


def check_label(label: str) -> str:
    if len(label) > LABEL_LIMIT or not label.isprintable():
        raise KeyInputError(f"a label is printable text of at most {LABEL_LIMIT} characters (no control characters)")
    return label


def check_prefix(prefix: str) -> str:
    """A key id as ``list`` prints it (or more of the digest): hex, at least ``MIN_PREFIX``."""
    prefix = prefix.strip().lower()
    if not (MIN_PREFIX <= len(prefix) <= 64 and _HEX.fullmatch(prefix)):
        raise KeyInputError(f"a key id is {MIN_PREFIX} to 64 hex characters of the key's digest (as `baton keys list` prints it)")
    return prefix

_md = sa.MetaData()
KEYS = sa.Table(
    "baton_api_keys", _md,
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("workspace", sa.String(200), nullable=False),
    sa.Column("label", sa.String(200), nullable=False),
    sa.Column("printable", sa.Text, nullable=True),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("revoked_at", sa.String(40), nullable=True),
    sa.Column("default_for", sa.String(200), nullable=True, unique=True),  # one default key per workspace
)


def _create_v1(conn: Connection) -> None:
    KEYS.create(conn, checkfirst=True)


MIGRATIONS = [Migration(1, "api keys", _create_v1)]


class KeyStore:
    def __init__(self, engine: Engine, *, owns_engine: bool = False) -> None:
        self.engine = engine
        self._owns_engine = owns_engine
        migrate(engine, "keys", MIGRATIONS)

    @classmethod
    def open(cls, url: str) -> KeyStore:
        from baton.memory.engine import make_engine

        return cls(make_engine(url), owns_engine=True)

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()

    def workspace_of(self, key_digest: str) -> str | None:
        """The workspace a live key opens, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(KEYS.c.workspace).where(KEYS.c.digest == key_digest, KEYS.c.revoked_at.is_(None))).first()
        return row[0] if row else None

    def default_key(self, workspace: str) -> str:
        """The workspace's default key, created on first use (see the module docstring)."""
        for _ in range(3):
            with self.engine.connect() as conn:
                row = conn.execute(sa.select(KEYS.c.printable).where(KEYS.c.default_for == workspace)).first()
            if row is not None:
                return str(row[0])
            key = new_key()
            try:
                self._insert(key, workspace, DEFAULT_LABEL, printable=key, default_for=workspace)
                return key
            except IntegrityError:
                continue  # another process made it first: read theirs
        raise RuntimeError(f"could not create or read the default key of workspace {workspace!r}")

    def create(self, workspace: str, label: str = "") -> str:
        """A new key for ``workspace`` (only its digest is kept: show it to the user once).
        ``KeyInputError`` for a workspace name or label that cannot be used."""
        key = new_key()
        self._insert(key, check_workspace(workspace), check_label(label) or "key")
        return key

    def revoke(self, key_digest_prefix: str, workspace: str) -> int:
        """Revoke the workspace's keys whose digest starts with the prefix; how many. The
        prefix is matched literally (``%`` and ``_`` are not wildcards)."""
        with self.engine.connect().execution_options(baton_write=True) as conn, conn.begin():
            result = conn.execute(KEYS.update().where(
                KEYS.c.workspace == workspace, KEYS.c.digest.startswith(key_digest_prefix, autoescape=True),
                KEYS.c.revoked_at.is_(None),
            ).values(revoked_at=_now(), printable=None, default_for=None))
        return result.rowcount

    def live(self, key_digest_prefix: str, workspace: str) -> list[dict[str, Any]]:
        """The workspace's live keys whose digest starts with the prefix (matched literally):
        whoever revokes by a short id first checks it names exactly one."""
        query = sa.select(KEYS.c.digest, KEYS.c.label, KEYS.c.default_for).where(
            KEYS.c.workspace == workspace, KEYS.c.digest.startswith(key_digest_prefix, autoescape=True),
            KEYS.c.revoked_at.is_(None))
        with self.engine.connect() as conn:
            return [{"digest": r[0], "label": r[1], "default": r[2] is not None} for r in conn.execute(query)]

    def list(self, workspace: str | None = None) -> list[dict[str, Any]]:
        query = sa.select(KEYS.c.digest, KEYS.c.workspace, KEYS.c.label, KEYS.c.created_at, KEYS.c.revoked_at,
                          KEYS.c.default_for)
        if workspace is not None:
            query = query.where(KEYS.c.workspace == workspace)
        with self.engine.connect() as conn:
            return [{"id": r[0][:12], "workspace": r[1], "label": r[2], "created_at": r[3], "revoked_at": r[4],
                     "default": r[5] is not None}
                    for r in conn.execute(query.order_by(KEYS.c.created_at))]

    def _insert(self, key: str, workspace: str, label: str, *, printable: str | None = None, default_for: str | None = None) -> None:
        with self.engine.connect().execution_options(baton_write=True) as conn, conn.begin():
            conn.execute(KEYS.insert().values(digest=digest(key), workspace=workspace, label=label, printable=printable,
                                              created_at=_now(), default_for=default_for))


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()
