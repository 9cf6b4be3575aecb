"""Versioned schema migrations for Baton's own state, safe when processes start together.

Each store (sessions, keys, ...) is a *component* with an ordered list of ``Migration``s.
``migrate(engine, component, migrations)`` applies the ones newer than the version recorded
in ``baton_schema_versions``, in one transaction, under a lock every process takes:

- PostgreSQL: ``pg_advisory_xact_lock`` on the component's name (released at commit). DDL
  is transactional, so a process that loses the race waits, then finds the work done.
- SQLite: the transaction starts with ``BEGIN IMMEDIATE`` (the database's write lock, with
  the engine's 30 s busy timeout); a second process waits for the first to commit.

(The backend's ``transaction_lock``, ``baton.store_backends``.)

A database newer than this code (a version above the last migration) is refused with
``StateSchemaError`` instead of being used half-understood.

Why not alembic: our migrations are a few ``CREATE TABLE`` statements per store, written
with SQLAlchemy Core so they run on both engines, and the one hard part — several replicas
starting at once — needs the lock above either way.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from baton.errors import StartupRefusal
from baton.store_backends import backend_of

VERSIONS_TABLE = "baton_schema_versions"


class StateSchemaError(StartupRefusal):
    """The state's schema is newer than this version of Baton understands: a start-up
    refusal (one line naming both versions, exit 2), never a half-understood state."""

    def __init__(self, component: str, found: int, known: int) -> None:
        super().__init__(f"the state has {component} schema version {found}, newer than the {known} this Baton knows",
                         "upgrade Baton (every process on this state) or point it at another state")
        self.component, self.found, self.known = component, found, known


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


def _lock_key(component: str) -> int:
    return zlib.crc32(f"baton-migrate:{component}".encode())


def current_version(conn: Connection, component: str) -> int:
    row = conn.execute(sa.text(f"SELECT version FROM {VERSIONS_TABLE} WHERE component = :c"), {"c": component}).fetchone()
    return int(row[0]) if row else 0


def migrate(engine: Engine, component: str, migrations: Sequence[Migration]) -> int:
    """Bring ``component`` to its latest version; returns that version."""
    with engine.connect().execution_options(baton_write=True) as conn, conn.begin():
        return migrate_on(conn, component, migrations)


def migrate_on(conn: Connection, component: str, migrations: Sequence[Migration]) -> int:
    """``migrate`` inside the caller's transaction (a store that installs more than
    versioned tables in one go, such as memory's triggers)."""
    latest = max((m.version for m in migrations), default=0)
    backend_of(conn).transaction_lock(conn, _lock_key(component))
    conn.execute(sa.text(
        f"CREATE TABLE IF NOT EXISTS {VERSIONS_TABLE} (component VARCHAR(100) PRIMARY KEY, version INTEGER NOT NULL)"))
    version = current_version(conn, component)
    if version > latest:
        raise StateSchemaError(component, version, latest)
    for migration in sorted(migrations, key=lambda m: m.version):
        if migration.version > version:
            migration.apply(conn)
            version = migration.version
    conn.execute(sa.text(f"DELETE FROM {VERSIONS_TABLE} WHERE component = :c"), {"c": component})
    conn.execute(sa.text(f"INSERT INTO {VERSIONS_TABLE} (component, version) VALUES (:c, :v)"), {"c": component, "v": version})
    return version

