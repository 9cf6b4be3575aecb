"""The databases Baton's own state runs on, each one unit: SQLite (files under ``BATON_HOME``,
the embedded default) and PostgreSQL (one database every process shares).

What differs between them (how a transaction takes a lock, how a row is upserted, whether a
read can pin a snapshot, the append-only triggers of the memory journal, the driver and the
timeouts of a URL) is an attribute or a method of its ``StoreBackend``. The stores (memory,
``baton.state``, durable pipelines) ask the backend of their connection (``backend_of``) or
of their URL (``backend_for_url``) and never compare a dialect's name: this module is the one
place that knows the names, and adding a backend is adding a unit to ``BACKENDS``.

Any other database is refused by ``backend_of`` (``UnsupportedStoreBackend``): a store on it
would run without its locks or its append-only guards. ``backend_for_url`` answers None, and
its callers refuse with their own message (or, ``make_engine``, open it plainly).

Nothing here imports SQLAlchemy at import time; the type names below are for type checkers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from baton.errors import ConfigurationError

if TYPE_CHECKING:
    from sqlalchemy import Table
    from sqlalchemy.dialects import postgresql, sqlite
    from sqlalchemy.engine import URL, Connection, Engine
    from sqlalchemy.types import TypeEngine

    Upsert = postgresql.Insert | sqlite.Insert  # an INSERT that can say on_conflict_do_update


class UnsupportedStoreBackend(ConfigurationError):
    """Baton's state is kept on SQLite or PostgreSQL; this database is neither."""


class JournalTables(Protocol):
    """What the journal guards need of memory's tables (``baton.memory.schema.Tables``)."""

    @property
    def events(self) -> Table: ...
    @property
    def payloads(self) -> Table: ...
    @property
    def prefix(self) -> str: ...
    @property
    def schema(self) -> str | None: ...
    def qualified(self, table: Table) -> str: ...


class StoreBackend:
    """One database Baton's state runs on. The defaults are a server's; units override."""

    name = ""  # SQLAlchemy's dialect name
    aliases: tuple[str, ...] = ()  # other backend names a URL may give it
    embedded = False  # a file on this machine (or memory), not a server: the state under BATON_HOME
    single_writer = False  # one writer at a time for the whole database: a process's writers queue first
    locks_rows = True  # SELECT ... FOR UPDATE locks the rows (else the write transaction holds the file)
    schemas = True  # tables may live in a named schema (DBOS's ``dbos``)
    listens = True  # LISTEN/NOTIFY: the database is also a bus between processes
    write_ahead_log = False  # committed pages wait in a log file until a checkpoint folds them in
    driver_writes = False  # the hottest writes run on the driver's own connection (``state/driver_writes.py``)
    snapshot_isolation: str | None = None  # the isolation level of a read that must see one snapshot
    driver: str | None = None  # the driver Baton installs for it (None: the URL's own)

    def __repr__(self) -> str:
        return f"<store backend {self.name}>"

    def serial_type(self) -> type[TypeEngine[int]]:
        """The integer type an autoincrementing primary key has."""
        from sqlalchemy import BigInteger

        return BigInteger

    def driver_url(self, url: URL) -> URL:
        """``url`` with the driver Baton installs for this backend."""
        return url if self.driver is None else url.set(drivername=self.driver)

    def read_only_url(self, url: str) -> str:
        """A URL that opens the database without writing (a server: the URL itself)."""
        return url

    def in_memory(self, url: URL) -> bool:
        """Whether ``url`` is a database that lives in this process's memory only."""
        return False

    def timeout_args(self, connect_s: float, statement_s: float) -> dict[str, Any]:
        """The driver's connect arguments that bound a connection attempt and a statement."""
        return {}

    def transaction_lock(self, conn: Connection, key: int | str) -> None:
        """Hold a lock named ``key`` until ``conn``'s transaction ends, so processes starting
        or writing together take turns (an ``int`` is the lock's number; a ``str`` is hashed
        by the database). Nothing where the write transaction is already the lock."""

    def snapshot(self, conn: Connection) -> Connection:
        """``conn`` reading one snapshot for the whole of its transaction."""
        return conn if self.snapshot_isolation is None else conn.execution_options(isolation_level=self.snapshot_isolation)

    def upsert(self, table: Table) -> Upsert:
        """An INSERT on ``table`` that can say ``on_conflict_do_update`` (this dialect's own)."""
        raise NotImplementedError

    def install_journal_guards(self, conn: Connection, tables: JournalTables, tombstone: str) -> None:
        """The triggers that make memory's journal append-only and its payloads immutable
        (deletable only after an event of type ``tombstone`` in the payload's stream)."""
        raise NotImplementedError


class SQLiteBackend(StoreBackend):
    name = "sqlite"
    embedded = True
    single_writer = True
    locks_rows = False  # BEGIN IMMEDIATE (memory.engine) takes the file's write lock up front
    schemas = False
    listens = False
    write_ahead_log = True
    driver_writes = True

    def serial_type(self) -> type[TypeEngine[int]]:
        from sqlalchemy import Integer

        return Integer  # SQLite autoincrements only INTEGER PRIMARY KEY

    def read_only_url(self, url: str) -> str:
        return url.replace("sqlite:///", "sqlite:///file:", 1) + "?mode=ro&uri=true"

    def in_memory(self, url: URL) -> bool:
        return url.database in (None, "", ":memory:")

    def upsert(self, table: Table) -> Upsert:
        from sqlalchemy.dialects.sqlite import insert

        return insert(table)

    def install_journal_guards(self, conn: Connection, tables: JournalTables, tombstone: str) -> None:
        ev, pl, p = tables.events.name, tables.payloads.name, tables.prefix
        for op in ("UPDATE", "DELETE"):
            conn.exec_driver_sql(
                f'CREATE TRIGGER IF NOT EXISTS "{p}events_no_{op.lower()}" BEFORE {op} ON "{ev}" '
                f"BEGIN SELECT RAISE(ABORT, 'baton memory journal is append-only: {op} refused'); END")
        conn.exec_driver_sql(
            f'CREATE TRIGGER IF NOT EXISTS "{p}payloads_no_update" BEFORE UPDATE ON "{pl}" '
            f"BEGIN SELECT RAISE(ABORT, 'baton memory payloads are immutable: UPDATE refused'); END")
        conn.exec_driver_sql(
            f'CREATE TRIGGER IF NOT EXISTS "{p}payloads_delete_needs_tombstone" BEFORE DELETE ON "{pl}" '
            f'WHEN NOT EXISTS (SELECT 1 FROM "{ev}" e WHERE e.workspace = OLD.workspace AND e.stream = OLD.stream '
            f"AND e.type = '{tombstone}') "
            f"BEGIN SELECT RAISE(ABORT, 'payload deletion is allowed only after a forget tombstone'); END")


class PostgreSQLBackend(StoreBackend):
    name = "postgresql"
    aliases = ("postgres",)
    snapshot_isolation = "REPEATABLE READ"
    driver = "postgresql+psycopg"  # psycopg 3, like DBOS

    def timeout_args(self, connect_s: float, statement_s: float) -> dict[str, Any]:
        return {"connect_timeout": max(1, round(connect_s)), "options": f"-c statement_timeout={int(statement_s * 1000)}"}

    def transaction_lock(self, conn: Connection, key: int | str) -> None:
        from sqlalchemy import text

        if isinstance(key, str):
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": key})
        else:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})

    def upsert(self, table: Table) -> Upsert:
        from sqlalchemy.dialects.postgresql import insert

        return insert(table)

    def install_journal_guards(self, conn: Connection, tables: JournalTables, tombstone: str) -> None:
        from sqlalchemy import text

        ev, pl, p, schema = tables.qualified(tables.events), tables.qualified(tables.payloads), tables.prefix, tables.schema
        fn = (lambda name: f'"{schema}"."{p}{name}"') if schema else (lambda name: f'"{p}{name}"')
        conn.execute(text(
            f"CREATE OR REPLACE FUNCTION {fn('refuse')}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"RAISE EXCEPTION 'baton memory journal is append-only: % refused on %', TG_OP, TG_TABLE_NAME; END $$"))
        conn.execute(text(
            f"CREATE OR REPLACE FUNCTION {fn('payload_delete')}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"IF NOT EXISTS (SELECT 1 FROM {ev} e WHERE e.workspace = OLD.workspace AND e.stream = OLD.stream "
            f"AND e.type = '{tombstone}') THEN "
            f"RAISE EXCEPTION 'payload deletion is allowed only after a forget tombstone'; END IF; RETURN OLD; END $$"))
        statements = [
            (f"{p}events_no_change", f"BEFORE UPDATE OR DELETE ON {ev} FOR EACH ROW EXECUTE FUNCTION {fn('refuse')}()"),
            (f"{p}events_no_truncate", f"BEFORE TRUNCATE ON {ev} FOR EACH STATEMENT EXECUTE FUNCTION {fn('refuse')}()"),
            (f"{p}payloads_no_update", f"BEFORE UPDATE ON {pl} FOR EACH ROW EXECUTE FUNCTION {fn('refuse')}()"),
            (f"{p}payloads_no_truncate", f"BEFORE TRUNCATE ON {pl} FOR EACH STATEMENT EXECUTE FUNCTION {fn('refuse')}()"),
            (f"{p}payloads_delete", f"BEFORE DELETE ON {pl} FOR EACH ROW EXECUTE FUNCTION {fn('payload_delete')}()"),
        ]
        for name, body in statements:
            conn.execute(text(f'CREATE OR REPLACE TRIGGER "{name}" {body}'))


SQLITE = SQLiteBackend()
POSTGRESQL = PostgreSQLBackend()
BACKENDS: tuple[StoreBackend, ...] = (SQLITE, POSTGRESQL)
_BY_NAME = {name: backend for backend in BACKENDS for name in (backend.name, *backend.aliases)}


def backend_named(name: str) -> StoreBackend:
    """The backend of SQLAlchemy dialect (or URL backend) ``name``; ``UnsupportedStoreBackend`` if none."""
    backend = _BY_NAME.get(name)
    if backend is None:
        raise UnsupportedStoreBackend(
            f"Baton's state runs on {' or '.join(b.name for b in BACKENDS)}, not {name!r}")
    return backend


def backend_of(bind: Connection | Engine) -> StoreBackend:
    """The backend of a connection's or an engine's dialect."""
    return backend_named(bind.dialect.name)


def backend_for_url(url: str | URL) -> StoreBackend | None:
    """The backend of a database URL; None for any other database or for text that is no URL."""
    import sqlalchemy as sa

    try:
        name = sa.make_url(url).get_backend_name()
    except (sa.exc.ArgumentError, ValueError):
        return None
    return _BY_NAME.get(name)


def url_backend(url: str | URL) -> StoreBackend:
    """``backend_for_url``, refusing any other database (``UnsupportedStoreBackend``)."""
    backend = backend_for_url(url)
    if backend is None:
        raise UnsupportedStoreBackend(f"Baton's state runs on {' or '.join(b.name for b in BACKENDS)}: "
                                      f"{str(url).split(':', 1)[0]!r} is neither")
    return backend


def serial_integer() -> TypeEngine[int]:
    """The type of an autoincrementing primary key on every backend (each its own variant)."""
    from sqlalchemy import BigInteger

    kind: TypeEngine[int] = BigInteger()
    for backend in BACKENDS:
        if backend.serial_type() is not BigInteger:
            kind = kind.with_variant(backend.serial_type(), backend.name)
    return kind
