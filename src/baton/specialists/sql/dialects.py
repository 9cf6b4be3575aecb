"""Dialect names: one spelling for every part of the SQL specialist.

sqlglot, SQLAlchemy and people spell the same engine differently (``postgresql`` vs
``postgres``, ``mariadb`` vs ``mysql``). Everything in ``baton.specialists.sql`` speaks the
sqlglot name; this module turns any common spelling into it, and refuses engines we do not
support rather than guessing (a wrong dialect silently changes how SQL parses, which is
exactly what the safety check must not get wrong).
"""

from __future__ import annotations

from baton.errors import ConfigurationError

SUPPORTED_DIALECTS: tuple[str, ...] = ("sqlite", "duckdb", "postgres", "mysql")

_ALIASES: dict[str, str] = {
    "sqlite": "sqlite",
    "sqlite3": "sqlite",
    "duckdb": "duckdb",
    "postgres": "postgres",
    "postgresql": "postgres",
    "pg": "postgres",
    "psycopg": "postgres",
    "psycopg2": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "pymysql": "mysql",
    "aiomysql": "mysql",
}


class UnsupportedDialectError(ConfigurationError):
    """A dialect name that is none of sqlite, duckdb, postgres, mysql (or their aliases)."""


def normalize_dialect(name: str) -> str:
    """The sqlglot dialect name for ``name``: ``"postgresql"`` -> ``"postgres"``,
    ``"mariadb"`` -> ``"mysql"``, ``"postgresql+psycopg"`` -> ``"postgres"``.

    Raises UnsupportedDialectError for anything else.
    """
    key = (name or "").strip().lower()
    key = key.split("+", 1)[0]  # SQLAlchemy "dialect+driver"
    try:
        return _ALIASES[key]
    except KeyError:
        supported = ", ".join(SUPPORTED_DIALECTS)
        raise UnsupportedDialectError(f"unsupported SQL dialect {name!r}; supported: {supported}") from None
