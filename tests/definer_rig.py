"""Databases holding definer routines, as administrators leave them (issue 24), for
``test_redteam_definer.py`` and ``test_db_routines.py``.

PostgreSQL: a database of its own (``baton_def_<token>``), so that a superuser-owned definer
function in ``public`` (executable by PUBLIC, the default) reaches no other test's roles; the
reader role is made by ``baton db grant``'s statements on schema ``ws``. MariaDB: a database
of its own and a reader account on it. Both are dropped at teardown, roles included.

    ws.orders                      the workspace's table (sum of amount: 42)
    other.secrets                  rows outside the workspace (one secret, unguessable)
    ws.exec_sql(q text)            SECURITY DEFINER, owned by the superuser: EXECUTE q
    public.leak()                  SECURITY DEFINER, superuser: the secrets, by PUBLIC's grant
    ws.order_total()               SECURITY DEFINER, superuser: sum(amount) (allowed by name in tests)
    ws."MixedCase"()               SECURITY DEFINER, superuser, a quoted name
    ws.twice(x int)                SECURITY INVOKER
    MariaDB rt.peek(p)        SQL SECURITY DEFINER (the default), root: LOAD_FILE(p)
    MariaDB rt.twice(x)            SQL SECURITY INVOKER
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa

from least_privilege import ReaderRole, create_reader_role, drop_reader_role

PG_SETUP = (
    "CREATE SCHEMA ws",
    "CREATE TABLE ws.orders (id int PRIMARY KEY, amount int)",
    "INSERT INTO ws.orders VALUES (1, 10), (2, 32)",
    "CREATE SCHEMA other",
    "CREATE TABLE other.secrets (secret text)",
    "INSERT INTO other.secrets VALUES ('{secret}')",
    "CREATE FUNCTION ws.exec_sql(q text) RETURNS int LANGUAGE plpgsql SECURITY DEFINER "
    "AS $f$ BEGIN EXECUTE q; RETURN 1; END $f$",
    "CREATE FUNCTION public.leak() RETURNS SETOF text LANGUAGE sql SECURITY DEFINER "
    "AS $f$ SELECT secret FROM other.secrets $f$",
    "CREATE FUNCTION ws.order_total() RETURNS bigint LANGUAGE sql SECURITY DEFINER "
    "AS $f$ SELECT sum(amount) FROM ws.orders $f$",
    'CREATE FUNCTION ws."MixedCase"() RETURNS int LANGUAGE sql SECURITY DEFINER AS $f$ SELECT 7 $f$',
    "CREATE FUNCTION ws.twice(x int) RETURNS int LANGUAGE sql AS $f$ SELECT x * 2 $f$",
)

MYSQL_SETUP = (
    "CREATE TABLE {db}.orders (id INT PRIMARY KEY, amount INT)",
    "INSERT INTO {db}.orders VALUES (1, 10), (2, 32)",
    "CREATE FUNCTION {db}.peek(p VARCHAR(255)) RETURNS LONGTEXT READS SQL DATA RETURN LOAD_FILE(p)",
    "CREATE FUNCTION {db}.twice(x INT) RETURNS INT SQL SECURITY INVOKER DETERMINISTIC RETURN x * 2",
)


@dataclass(frozen=True)
class DefinerDB:
    admin_url: str  # the superuser / root, on this database
    reader: ReaderRole
    name: str  # PostgreSQL: the database; MariaDB: the database (the reader's schema)
    secret: str
    schema: str  # the workspace's schema

    def admin(self, *statements: str) -> None:
        run(self.admin_url, *statements)


def run(url: str, *statements: str) -> list[tuple]:
    """``statements`` as written (no parameters: a ``%`` is sent as is), each committed; the
    last one's rows."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")
    rows: list[tuple] = []
    try:
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            for statement in statements:
                cursor.execute(statement)
                rows = [tuple(r) for r in cursor.fetchall()] if cursor.description else []
        finally:
            raw.close()
    finally:
        engine.dispose()
    return rows


def as_role(url: str, statement: str) -> list[tuple]:
    """``statement`` straight through the driver as the reader (no Baton): the control."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            rows = [tuple(r) for r in connection.exec_driver_sql(statement).fetchall()]
            connection.commit()
            return rows
    finally:
        engine.dispose()


@pytest.fixture
def pg_definer(postgres_url: str) -> Iterator[DefinerDB]:
    token = uuid.uuid4().hex[:10]
    name, secret = f"baton_def_{token}", f"secret-{uuid.uuid4().hex}"
    run(postgres_url, f"CREATE DATABASE {name}")
    admin_url = sa.make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
    reader = None
    try:
        run(admin_url, *(s.replace("{secret}", secret) for s in PG_SETUP))
        reader = create_reader_role(admin_url, "ws", prefix="baton_def")
        yield DefinerDB(admin_url, reader, name, secret, "ws")
    finally:
        run(postgres_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if reader is not None:
            drop_reader_role(reader.name, postgres_url)


@pytest.fixture
def mysql_definer(mysql_url: str) -> Iterator[DefinerDB]:
    token = uuid.uuid4().hex[:10]
    name = f"baton_def_{token}"
    run(mysql_url, f"CREATE DATABASE {name}", *(s.replace("{db}", name) for s in MYSQL_SETUP))
    reader = None
    try:
        reader = create_reader_role(mysql_url, name, prefix="baton_def")
        run(mysql_url, f"GRANT EXECUTE ON FUNCTION {name}.peek TO '{reader.name}'@'%'",
            f"GRANT EXECUTE ON FUNCTION {name}.twice TO '{reader.name}'@'%'")
        yield DefinerDB(mysql_url, reader, name, "", name)
    finally:
        run(mysql_url, f"DROP DATABASE IF EXISTS {name}")
        if reader is not None:
            drop_reader_role(reader)
