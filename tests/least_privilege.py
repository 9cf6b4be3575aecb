"""Least-privilege roles on the shared test servers: tests run the agent as production should.

The servers here log in as ``postgres`` (a superuser) and ``root`` (ALL PRIVILEGES), which
Baton refuses for model-written SQL. A test that exercises the agent connects as a role
made by ``baton db grant``'s own statements instead:

    from least_privilege import reader_role  # noqa: F401  (fixture)

    def test_x(reader_role, postgres_url):
        role = reader_role(postgres_url, "my_schema")   # a ReaderRole; dropped at teardown
        conn = SQLConnection(role.url, schema="my_schema")

``create_reader_role`` / ``drop_reader_role`` do the same without the fixture (``make_db`` in
``sql_test_databases.py`` uses them: every ``TestDB`` on a server has its own reader).
Names carry a uuid, since several engineers' tests share the servers; dropping reassigns
and drops whatever the role owns or was granted (PostgreSQL ``REASSIGN OWNED`` +
``DROP OWNED``), so a failed test leaves nothing behind.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa

from baton.specialists.sql.connection import dialect_of
from baton.specialists.sql.grants import apply_grant_statements, grant_statements, role_url, server_flavor


@dataclass(frozen=True)
class ReaderRole:
    """A read-only role: ``url`` connects as it (password included), ``admin_url`` made it."""

    name: str
    url: str
    admin_url: str
    schema: str
    password: str


def create_reader_role(admin_url: str, schema: str, *, prefix: str = "baton_reader") -> ReaderRole:
    """A new least-privilege role reading ``schema`` (PostgreSQL) / database ``schema``
    (MySQL/MariaDB), created with the statements ``baton db grant --apply`` runs."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    password = secrets.token_urlsafe(12)
    flavor = server_flavor(admin_url) if dialect_of(admin_url) == "mysql" else None
    apply_grant_statements(admin_url, grant_statements(admin_url, schema, name, password, flavor=flavor))
    url = role_url(admin_url, name, password, schema).render_as_string(hide_password=False)
    return ReaderRole(name, url, admin_url, schema, password)


def drop_reader_role(role: ReaderRole | str, admin_url: str | None = None) -> None:
    """Drop the role (or the role named ``role`` on ``admin_url``) and everything it owns or
    was granted; no error when it is already gone."""
    name, admin = (role.name, role.admin_url) if isinstance(role, ReaderRole) else (role, admin_url)
    assert admin is not None, "drop_reader_role(name, admin_url)"
    engine = sa.create_engine(admin, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as c:
            if dialect_of(admin) == "postgres":
                exists = c.exec_driver_sql("SELECT 1 FROM pg_roles WHERE rolname = %(n)s", {"n": name}).first()
                if exists:
                    c.exec_driver_sql(f'REASSIGN OWNED BY "{name}" TO CURRENT_USER')
                    c.exec_driver_sql(f'DROP OWNED BY "{name}"')
                    c.exec_driver_sql(f'DROP ROLE IF EXISTS "{name}"')
            else:
                c.exec_driver_sql(f"DROP USER IF EXISTS '{name}'")  # host part '%', as granted
    finally:
        engine.dispose()


@pytest.fixture
def reader_role() -> Iterator[Callable[..., ReaderRole]]:
    """Factory fixture: ``reader_role(admin_url, schema)`` -> ``ReaderRole``, dropped at teardown."""
    made: list[ReaderRole] = []

    def make(admin_url: str, schema: str, **kw: str) -> ReaderRole:
        role = create_reader_role(admin_url, schema, **kw)
        made.append(role)
        return role

    yield make
    for role in reversed(made):
        drop_reader_role(role)


@pytest.fixture
def postgres_reader(postgres_url: str) -> Iterator[ReaderRole]:
    """A reader role on a new, empty schema of the PostgreSQL test database (both dropped after)."""
    schema = f"baton_lp_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(postgres_url, poolclass=sa.pool.NullPool)
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE SCHEMA {schema}")
    role = create_reader_role(postgres_url, schema)
    try:
        yield role
    finally:
        drop_reader_role(role)
        with admin.begin() as c:
            c.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        admin.dispose()


@pytest.fixture
def mysql_reader(mysql_url: str) -> Iterator[ReaderRole]:
    """A reader account on a new, empty database of the MySQL/MariaDB test server (both dropped after)."""
    database = f"baton_lp_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(mysql_url, poolclass=sa.pool.NullPool)
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE DATABASE {database}")
    role = create_reader_role(mysql_url, database)
    try:
        yield role
    finally:
        drop_reader_role(role)
        with admin.begin() as c:
            c.exec_driver_sql(f"DROP DATABASE IF EXISTS {database}")
        admin.dispose()
