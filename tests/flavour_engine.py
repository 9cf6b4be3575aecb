"""A fifth engine that lives only in the tests: "litesql", a second SQLite flavour.

It is what ``docs/how-to/adding-an-engine.md`` walks through, and it touches no file of Baton:
a sqlglot dialect (sqlglot registers a ``Dialect`` subclass under its lower-cased class name),
a SQLAlchemy dialect name for its URLs (``litesql:///path``), and an ``Engine`` registered
with ``baton.specialists.sql.engines.register``. Being a flavour of SQLite, it inherits
SQLite's engine and says how it differs: its own name, URLs and error wording. The engine
contract tests (``test_engine_contract.py``) run on it like on the four built-in engines.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlglot.dialects.sqlite import SQLite

from baton.specialists.sql.classify import ClassifiedError
from baton.specialists.sql.engines import register, unregister
from baton.specialists.sql.engines.sqlite import SQLiteEngine


class Litesql(SQLite):
    """The flavour's SQL, as sqlglot reads and writes it: SQLite's."""


class LitesqlEngine(SQLiteEngine):
    name = "litesql"
    title = "LiteSQL (a SQLite flavour registered by the tests)"
    aliases = ("lite",)
    backends = ("litesql",)
    installed_drivers = {}

    def classify(self, error: BaseException, message: str) -> ClassifiedError:
        classified = super().classify(error, message)
        classified.message = f"litesql: {classified.message}"  # how this flavour's errors read
        return classified


@contextmanager
def litesql_registered() -> Iterator[LitesqlEngine]:
    """The flavour registered (and its SQLAlchemy URLs readable) for the duration."""
    sa.dialects.registry.register("litesql", "sqlalchemy.dialects.sqlite.pysqlite", "SQLiteDialect_pysqlite")
    engine = register(LitesqlEngine())
    try:
        yield engine
    finally:
        unregister(engine.name)
