"""Database URLs as people write them, read with the drivers Baton installs.

``postgres://`` and ``postgresql://`` (what psql, most hosting dashboards and ``DATABASE_URL``
give) name no driver: SQLAlchemy reads the first as no dialect at all and the second as
psycopg2, neither of which Baton ships. ``mysql://`` and ``mariadb://`` default to mysqlclient
(``MySQLdb``), which it does not ship either. Each is read here as the driver it does install
(psycopg 3, PyMySQL); a URL that names its driver is kept as written. Text that is not a URL
at all (a bare file name, a typo) is a ``ConfigurationError`` (one line at the CLI, exit 2),
not SQLAlchemy's ``ArgumentError`` escaping as a traceback.
"""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from baton.errors import ConfigurationError
from baton.specialists.sql.engines import installed_driver

EXAMPLES = "postgresql://user@host:5432/dbname, mysql://user@host/dbname, sqlite:///path/to/file.sqlite"

def database_url(url: str | URL) -> URL:
    """``url`` parsed, with the installed driver when it names none (module docstring)."""
    try:
        parsed = make_url(url)
    except ArgumentError:  # the text is not echoed: a malformed URL may still hold a password
        raise ConfigurationError(f"not a database URL: expected something like {EXAMPLES}") from None
    driver = installed_driver(parsed.drivername)  # as each engine declares (engines/)
    return parsed.set(drivername=driver) if driver else parsed


def database_url_text(url: str | URL) -> str:
    """``database_url`` as a string, password included (for code that takes strings)."""
    return database_url(url).render_as_string(hide_password=False)
