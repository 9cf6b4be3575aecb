"""Checking a ``--database`` URL before anything else runs: one clear line, never a traceback.

``baton ask --database URL`` (and ``serve``, ``verified``) used to start without touching
the database: a malformed URL printed a 120-line traceback, and a database that does not
exist got the no-model answer with exit code 0. ``check_database`` opens the connection,
reads the schema and inspects the role exactly as the first question would, and says what
is wrong in one line:

- not a URL Baton can use (malformed, unknown driver or dialect);
- the server cannot be reached (refused, unknown host, timeout);
- no such database (or, for SQLite/DuckDB, no such file);
- the login or a permission was refused (unknown role, bad password, access denied);
- a privileged role without ``--unsafe-allow-privileged-role`` (the engine guard's reason).

No table this login can read (an empty database, or a role without SELECT grants) is a
warning, not a refusal: an empty database is a legitimate place to start serving from.

Decisions: the URL shown never carries its password; the line names the fix where one is
known; the check opens its own connection and closes it (the workspace opens its own).
"""

from __future__ import annotations

import re
from typing import Any

EXAMPLE_URL = "postgresql+psycopg://user@host:5432/dbname"


def safe_url(url: str) -> str:
    """``url`` without its password (``baton.workspace.spec.mask_url``)."""
    from baton.workspace.spec import mask_url

    return mask_url(url)


def _where(url: str) -> str:
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        return f"{parsed.host}:{parsed.port}" if parsed.host and parsed.port else parsed.host or safe_url(url)
    except Exception:
        return safe_url(url)


def describe_failure(url: str, exc: BaseException) -> str:
    """One line saying what is wrong with ``url`` (module docstring)."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    from baton.errors import ConfigurationError

    shown = safe_url(url)
    text = " ".join(str(exc).split())
    lowered = text.lower()
    if type(exc).__name__ == "PrivilegedRoleError":
        return f"{shown}: {text}"
    if isinstance(exc, ConfigurationError) and text.startswith("not a database URL"):  # specialists/sql/urls.py
        return "N" + text[1:]
    if isinstance(exc, (ArgumentError, NoSuchModuleError, ConfigurationError, ValueError)):
        return f"Not a database URL Baton can use ({text}): expected something like {EXAMPLE_URL}"
    if "unable to open database file" in lowered or ("no such file" in lowered):
        return f"No database file at {shown} (check the path; Baton opens files read-only and never creates one)"
    if re.search(r'database "[^"]*" does not exist|unknown database', lowered):
        return f"No such database: {shown} (the server at {_where(url)} answered, but has no database by that name)"
    if re.search(r"password authentication failed|access denied|role \"[^\"]*\" does not exist|permission denied|"
                 r"not authorized|authentication", lowered):
        return f"The database refused this login: {shown} ({_short(text)})"
    if re.search(r"connection refused|could not translate host|name or service not known|timed out|timeout|"
                 r"can't connect|could not connect|no route to host|server closed the connection", lowered):
        return f"Cannot reach the database server at {_where(url)} ({_short(text)})"
    return f"Cannot use the database {shown}: {_short(text)}"


def _short(text: str, limit: int = 200) -> str:
    text = re.sub(r"^\w+: (connection failed: )?", "", text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


async def check_database(url: str, *, allow_privileged_role: bool = False) -> tuple[str | None, Any]:
    """``(None, schema)`` when the database answers as a question would need it, else
    ``(one line, None)``. An empty schema is returned as is (the caller warns)."""
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.privileges import enforce_least_privilege

    connection = None
    try:
        extra: dict[str, Any] = {"allow_privileged_role": True} if allow_privileged_role else {}
        connection = SQLConnection(url, id="database", **extra)
        schema = await connection.schema()
        await enforce_least_privilege(connection)
    except Exception as exc:
        return describe_failure(url, exc), None
    finally:
        if connection is not None:
            try:
                await connection.aclose()
            except Exception:
                pass
    return None, schema


def no_tables_warning(url: str) -> str:
    return (f"{safe_url(url)} has no table this login can read (an empty database, or no SELECT permission: "
            f"see `baton db grant`)")


def refuse_unusable_database(url: str, *, allow_privileged_role: bool = False) -> None:
    """For the CLI: print the one line on stderr and exit 2 when ``url`` cannot be used."""
    import asyncio

    import typer
    from rich.console import Console
    from rich.markup import escape

    problem, schema = asyncio.run(check_database(url, allow_privileged_role=allow_privileged_role))
    err = Console(stderr=True, soft_wrap=True)
    if problem is not None:
        err.print(f"[red]error:[/red] {escape(problem)}")
        raise typer.Exit(2)
    if not schema.tables:
        err.print(f"[yellow]warning:[/yellow] {escape(no_tables_warning(url))}")


__all__ = ["check_database", "describe_failure", "no_tables_warning", "refuse_unusable_database", "safe_url"]
