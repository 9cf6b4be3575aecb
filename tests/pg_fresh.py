"""A fresh PostgreSQL database per test (created on the test server, dropped afterwards),
for tests of Baton's own state: migrations must meet an empty database."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import sqlalchemy as sa


@contextlib.contextmanager
def fresh_database(server_url: str, prefix: str = "baton_state") -> Iterator[str]:
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield sa.make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
