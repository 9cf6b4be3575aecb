"""Throw-away databases on the four real engines for the SQL tests.

``make_db(kind, setup_statements)`` creates an isolated database (SQLite/DuckDB: a file in
tmp_path; PostgreSQL: a uniquely named schema; MariaDB: a uniquely named database), runs the
setup statements with a writable admin connection, and returns a ``TestDB`` that opens
read-only ``SQLConnection``s on it and computes checksums with the admin connection. On the
servers those connections log in as a least-privilege reader made for that database
(``least_privilege.py``), as Baton runs in production (it refuses the superuser);
``db.connection(allow_privileged_role=True)`` logs in as the administrator instead, for tests
of the engine guards alone.
Everything is dropped at teardown. The servers are shared with other engineers' tests, so
every name carries a uuid.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from baton.specialists.sql.connection import SQLConnection
from least_privilege import create_reader_role, drop_reader_role

KINDS = ["sqlite", "duckdb", "postgres", "mysql"]


@dataclass
class TestDB:
    __test__ = False
    kind: str
    url: str
    admin_url: str
    schema: str | None = None
    connections: list[SQLConnection] = field(default_factory=list)

    def connection(self, **options: Any) -> SQLConnection:
        """As the reader role; ``allow_privileged_role=True``: as the administrator."""
        if self.schema and "schema" not in options:
            options["schema"] = self.schema
        url = self.admin_url if options.get("allow_privileged_role") else self.url
        conn = SQLConnection(url, id=f"test-{self.kind}", **options)
        self.connections.append(conn)
        return conn

    def close_connections(self) -> None:
        for conn in self.connections:
            conn.close()

    def admin(self) -> sa.Engine:
        if self.kind == "duckdb":
            self.close_connections()  # DuckDB: one configuration per file per process
        args: dict[str, Any] = {}
        if self.kind == "postgres" and self.schema:
            args["connect_args"] = {"options": f"-c search_path={self.schema}"}
        return sa.create_engine(self.admin_url, poolclass=sa.pool.NullPool, **args)

    def run(self, *statements: str) -> None:
        engine = self.admin()
        with engine.begin() as c:
            for statement in statements:
                c.exec_driver_sql(statement)
        engine.dispose()

    def tables(self) -> list[str]:
        engine = self.admin()
        with engine.connect() as c:
            if self.kind == "duckdb":
                names = [r[0] for r in c.exec_driver_sql("SELECT table_name FROM duckdb_tables()")]
            else:
                names = sa.inspect(c).get_table_names(schema=self.schema if self.kind == "postgres" else None)
        engine.dispose()
        return sorted(names)

    def checksum(self) -> str:
        """sha256 over every table's name and sorted rows (admin connection, not the one tested)."""
        digest = hashlib.sha256()
        engine = self.admin()
        names = self.tables()
        with engine.connect() as c:
            for name in names:
                rows = c.exec_driver_sql(f"SELECT * FROM {name}").fetchall()
                digest.update(name.encode())
                for row in sorted(repr(tuple(r)) for r in rows):
                    digest.update(row.encode())
        engine.dispose()
        return digest.hexdigest()


@pytest.fixture
def make_db(request, tmp_path: Path) -> Callable[..., TestDB]:
    cleanups: list[Callable[[], None]] = []

    def make(kind: str, *setup: str) -> TestDB:
        suffix = uuid.uuid4().hex[:10]
        if kind == "sqlite":
            path = tmp_path / f"db_{suffix}.sqlite"
            db = TestDB(kind, f"sqlite:///{path}", f"sqlite:///{path}")
        elif kind == "duckdb":
            path = tmp_path / f"db_{suffix}.duckdb"
            db = TestDB(kind, f"duckdb:///{path}", f"duckdb:///{path}")
        elif kind == "postgres":
            base = request.getfixturevalue("postgres_url")
            schema = f"baton_t_{suffix}"
            root = sa.create_engine(base, poolclass=sa.pool.NullPool)
            with root.begin() as c:
                c.exec_driver_sql(f"CREATE SCHEMA {schema}")
            root.dispose()
            reader = create_reader_role(base, schema)
            db = TestDB(kind, reader.url, base, schema=schema)

            def drop_schema() -> None:
                engine = sa.create_engine(base, poolclass=sa.pool.NullPool)
                with engine.begin() as c:
                    c.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                engine.dispose()

            cleanups.append(drop_schema)
            cleanups.append(lambda reader=reader: drop_reader_role(reader))
        elif kind == "mysql":
            base = sa.engine.make_url(request.getfixturevalue("mysql_url"))
            name = f"baton_t_{suffix}"
            root = sa.create_engine(base, poolclass=sa.pool.NullPool)
            with root.begin() as c:
                c.exec_driver_sql(f"CREATE DATABASE {name}")
            root.dispose()
            url = base.set(database=name).render_as_string(hide_password=False)
            reader = create_reader_role(url, name)
            db = TestDB(kind, reader.url, url)

            def drop_database() -> None:
                engine = sa.create_engine(base, poolclass=sa.pool.NullPool)
                with engine.begin() as c:
                    c.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
                engine.dispose()

            cleanups.append(drop_database)
            cleanups.append(lambda reader=reader: drop_reader_role(reader))
        else:
            raise ValueError(kind)
        cleanups.append(db.close_connections)
        if setup:
            db.run(*setup)
        return db

    yield make
    for cleanup in reversed(cleanups):
        cleanup()
