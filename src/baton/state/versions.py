"""Every family of Baton's state and its schema version: read without changing anything
(``check``, at every start), or brought up to date (``migrate``, ``baton state migrate``).

The families: ``sessions`` (conversations), ``keys`` (API keys), ``login_sessions`` (the
page's login tokens), ``memory`` (journal, payloads, records) and ``pipelines`` (DBOS's own
system tables, read and migrated through DBOS's functions). Ours record their version in
``baton_schema_versions`` (``migrations.py``); DBOS in its ``dbos_migrations``.

The decision (docs/concepts/scale.md): an *older* family is migrated automatically by the
first process that opens it, as before, under each family's lock, because every step is
additive and replicas starting together install it once; ``baton state migrate`` does all of
it ahead of a rolling upgrade, and shows what it did. A *newer* family (state written by a
newer Baton) is refused by every process before it starts (``check``): one line naming both
versions, exit 2 (``StateSchemaError``, a ``StartupRefusal``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.state.file_names import KEYS_FILE, MEMORY_FILE, PIPELINES_FILE, SESSIONS_FILE
from baton.state.migrations import VERSIONS_TABLE, Migration, StateSchemaError, migrate
from baton.store_backends import url_backend

if TYPE_CHECKING:
    from baton.state.location import State

PIPELINES = "pipelines"
DBOS_SCHEMA = "dbos"  # DurableConfig's default system schema
# Memory creates its own tables (memory/schema.py, idempotent); this records which shape they have.
MEMORY_MIGRATIONS = [Migration(1, "memory journal, payloads and records (memory/schema.py)", lambda conn: None)]


@dataclass(frozen=True)
class FamilyVersion:
    family: str
    where: str  # "state database", or the workspace / file of an embedded state
    found: int  # 0: not created yet
    known: int

    @property
    def newer(self) -> bool:
        return self.found > self.known


def known_versions() -> dict[str, int]:
    """The version of each of our families this Baton writes."""
    from baton.state import keystore, login_tokens, session_tables

    return {name: max(m.version for m in migrations) for name, migrations in (
        ("sessions", session_tables.MIGRATIONS), ("keys", keystore.MIGRATIONS),
        ("login_sessions", login_tokens.MIGRATIONS), ("memory", MEMORY_MIGRATIONS))}


def stamp_memory(url: str) -> None:
    """Record (or refuse) the memory family's version before ``MemoryStore`` opens ``url``."""
    import sqlalchemy as sa

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        migrate(engine, "memory", MEMORY_MIGRATIONS)
    finally:
        engine.dispose()


def open_memory(url: str) -> Any:
    """A ``MemoryStore`` on ``url``, its version checked and recorded first."""
    from baton.memory import MemoryStore, TrustedAuthenticator

    stamp_memory(url)
    return MemoryStore(url, authenticator=TrustedAuthenticator())


# --- reading -------------------------------------------------------------------------------------


def read(state: State) -> list[FamilyVersion]:
    """Every family present in ``state`` with its version (nothing is created)."""
    known = known_versions()
    rows: list[FamilyVersion] = []
    if state.url is None:
        for path, families, where in _embedded_files(state.home, KEYS_FILE, SESSIONS_FILE, MEMORY_FILE):
            found = _sqlite_versions(path)
            rows += [FamilyVersion(f, where, found.get(f, 0), known[f]) for f in families]
        if (state.home / PIPELINES_FILE).exists():
            rows.append(_dbos_version(f"sqlite:///{state.home / PIPELINES_FILE}", "pipelines.sqlite"))
        return rows
    found = _url_versions(state.url)
    rows += [FamilyVersion(f, "state database", found.get(f, 0), v) for f, v in known.items()]
    rows.append(_dbos_version(state.url, "state database"))
    return rows


def check(state: State) -> None:
    """Refuse (``StateSchemaError``) when any family was written by a newer Baton."""
    for row in read(state):
        if row.newer:
            label = row.family if row.where == "state database" else f"{row.family} ({row.where})"
            raise StateSchemaError(label, row.found, row.known)


def _embedded_files(home: Path, keys: str, sessions: str, memory: str) -> Iterator[tuple[Path, tuple[str, ...], str]]:
    if (home / keys).exists():
        yield home / keys, ("keys", "login_sessions"), keys
    if not home.is_dir():
        return
    for folder in sorted(p for p in home.iterdir() if p.is_dir()):
        for name, family in ((sessions, "sessions"), (memory, "memory")):
            if (folder / name).exists():
                yield folder / name, (family,), f"workspace folder {folder.name}"


def _sqlite_versions(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VERSIONS_TABLE,)).fetchone() is None:
            return {}
        return {str(c): int(v) for c, v in conn.execute(f"SELECT component, version FROM {VERSIONS_TABLE}")}
    finally:
        conn.close()


def _url_versions(url: str) -> dict[str, int]:
    import sqlalchemy as sa

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(VERSIONS_TABLE):
                return {}
            return {str(c): int(v) for c, v in conn.execute(sa.text(f"SELECT component, version FROM {VERSIONS_TABLE}"))}
    finally:
        engine.dispose()


def _dbos_version(url: str, where: str) -> FamilyVersion:
    """DBOS's recorded and latest system-schema versions, through DBOS's own readers."""
    import sqlalchemy as sa
    from dbos._migration import get_migration_versions, get_sqlite_migration_versions

    backend = url_backend(url)
    engine = sa.create_engine(backend.read_only_url(url), poolclass=sa.pool.NullPool)
    try:  # DBOS keeps its tables in its schema where the backend has schemas
        found, latest = get_migration_versions(engine, DBOS_SCHEMA, True) if backend.schemas else get_sqlite_migration_versions(engine)
    finally:
        engine.dispose()
    return FamilyVersion(PIPELINES, where, int(found), int(latest))


# --- migrating -----------------------------------------------------------------------------------


def migrate_all(state: State) -> list[tuple[FamilyVersion, int]]:
    """Bring every family of ``state`` to this Baton's version; each family's row before,
    and its version after. Refuses first if any family is newer (nothing is changed then)."""
    check(state)
    before = read(state)
    if state.url is None:
        _migrate_embedded(state)
    else:
        _migrate_url(state)
    after = {(r.family, r.where): r.found for r in read(state)}
    seen = {(r.family, r.where) for r in before}
    rows = [(r, after.get((r.family, r.where), r.found)) for r in before]
    for r in read(state):  # families created just now
        if (r.family, r.where) not in seen:
            rows.append((FamilyVersion(r.family, r.where, 0, r.known), r.found))
    return rows


def _migrate_url(state: State) -> None:
    from baton.state.login_tokens import LoginTokens
    from baton.state.sessions import SessionStore

    assert state.url is not None
    keys = state.keys()
    try:
        LoginTokens(keys.engine).close()
    finally:
        keys.close()
    SessionStore(state.url).close()
    open_memory(state.url).close()
    _migrate_dbos(state.url)


def _migrate_embedded(state: State) -> None:
    from baton.state.login_tokens import LoginTokens
    from baton.state.sessions import SessionStore
    keys = state.keys()
    try:
        LoginTokens(keys.engine).close()
    finally:
        keys.close()
    for folder in sorted(p for p in state.home.iterdir() if p.is_dir()):
        if (folder / SESSIONS_FILE).exists():
            SessionStore(folder / SESSIONS_FILE).close()
        if (folder / MEMORY_FILE).exists():
            open_memory(f"sqlite:///{folder / MEMORY_FILE}").close()
    _migrate_dbos(f"sqlite:///{state.home / PIPELINES_FILE}")


def _migrate_dbos(url: str) -> None:
    import logging

    from dbos import DBOS

    logging.getLogger("dbos").setLevel(logging.WARNING)
    DBOS.migrate(url, schema=DBOS_SCHEMA)
