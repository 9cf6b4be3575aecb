"""`baton db ...`: what a database role may do, and the SQL for one that may only read.

``baton db check URL`` connects as the URL's role and prints what it may do beyond reading
(``baton.specialists.sql.privileges``) and the SECURITY DEFINER routines it may call
(``baton.specialists.sql.routines``). Exit status: 0 nothing critical (Baton will run
model-written SQL as this role), 1 critical (it can read or write server files, run
programs, signal other sessions or read secrets: Baton refuses it unless told otherwise; or
it may call a definer routine whose owner holds more than it; or the SQLite/DuckDB file does
not exist), 2 the check could not run (bad URL, server unreachable).

``baton db grant URL --schema S`` prints the statements that create (or reset) a read-only
role (``baton.specialists.sql.grants``), ready to pipe into ``psql`` / ``mariadb``, then a
``REVOKE EXECUTE ... FROM PUBLIC`` for each definer routine ``db check`` would flag (the
only change to PUBLIC it ever makes); with ``--apply`` it runs them as the URL's
(administrator) role, all or nothing. The password comes from an
environment variable (``--password-env``), never from the command line (which other users of
the machine can read in the process list), and is printed as ``********`` unless
``--show-password``.

``unsafe_privileged_role_opt_in`` is the one place ``baton serve`` and ``baton ask`` read the
opt-in (``--unsafe-allow-privileged-role`` or ``BATON_UNSAFE_ALLOW_PRIVILEGED_ROLE=1``) and
print its warning, on standard error so that ``--json`` output stays parseable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.routines import RoutineCatalog

app = typer.Typer(no_args_is_help=True)


def unsafe_privileged_role_opt_in(flag: bool) -> bool:
    """True when the user opted in (flag or environment); prints the warning every time."""
    from baton.specialists.sql.privileges import OPT_IN_ENV, OPT_IN_FLAG, privileged_role_opt_in

    allowed = privileged_role_opt_in(flag)
    if allowed:
        Console(stderr=True, soft_wrap=True).print(
            f"[bold red]warning:[/bold red] {OPT_IN_FLAG} (or {OPT_IN_ENV}=1) is set: model-written SQL will run even if "
            "the database role can read or write server files, run programs, signal other sessions or read secrets. "
            "A read-only transaction does not stop those; create a read-only role with "
            "`baton db grant URL --schema S --apply` and drop this flag.")
    return allowed


AllowFunctionOption = typer.Option(
    [], "--allow-function", metavar="SCHEMA.NAME",
    help="With --database: a SECURITY DEFINER routine model SQL may call (repeatable). Its body runs with its owner's "
         "rights and is not checked: allow only routines whose body you have read.")


def allowed_functions(values: list[str] | None, database: str | None) -> tuple[str, ...]:
    """``--allow-function`` values, checked to be schema-qualified names (one line and exit 2
    otherwise); empty without ``--database``."""
    from baton.errors import BatonError
    from baton.specialists.sql.connection import dialect_of
    from baton.specialists.sql.routines import allowed_keys

    if not values or not database:
        return ()
    try:
        allowed_keys(values, dialect_of(database))
    except BatonError as exc:
        raise _fail(f"--allow-function: {exc}") from None
    return tuple(values)


def _fail(message: str) -> typer.Exit:
    Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(2)


@app.command("check")
def check(
    url: str = typer.Argument(..., help="The SQLAlchemy URL Baton would connect with (its role is the one checked)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
) -> None:
    """Print what the URL's role may do; exit 1 when it can read or write server files, run
    programs, signal other sessions or read secrets, when it may call a SECURITY DEFINER
    routine whose owner holds more than it, or when the SQLite/DuckDB file does not exist."""
    from baton.errors import BatonError
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.privileges import inspect_role
    from baton.specialists.sql.role_report import describe_risks
    from baton.specialists.sql.routines import inspect_routines

    try:
        connection = SQLConnection(url, id="db-check", pool_size=1, connection_retries=0)
    except BatonError as exc:
        raise _fail(str(exc)) from None
    missing = _missing_file(connection)
    if missing:
        connection.close()
        Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(missing)}")
        raise typer.Exit(1)
    try:
        report = inspect_role(connection)
        routines = inspect_routines(connection)
    except BatonError as exc:
        raise _fail(f"could not inspect the role: {exc}") from None
    finally:
        connection.close()
    elevated = routines.elevated
    failed = report.critical or bool(elevated)
    if as_json:
        print(json.dumps({**report.to_dict(), "critical": failed, "role_critical": report.critical,
                          "definer_routines": [r.to_dict() for r in routines.definers]}))
        raise typer.Exit(1 if failed else 0)
    console = Console(soft_wrap=True)
    shown = connection.url.render_as_string(hide_password=True)
    console.print(f"role [bold]{escape(report.role)}[/bold] on {escape(report.server or report.dialect)} ({escape(shown)})")
    if report.findings:
        table = Table(show_lines=False)
        for column in ("", "risk", "what the role may do", "from"):
            table.add_column(column)
        for finding in report.findings:
            table.add_row("[bold red]critical[/bold red]" if finding.critical else "[yellow]note[/yellow]",
                          str(finding.risk), escape(finding.sentence), escape(finding.source))
        console.print(table)
    for note in report.notes:
        console.print(f"[dim]{escape(note)}[/dim]")
    _print_definers(console, routines)
    if report.critical:
        console.print(f"[bold red]CRITICAL[/bold red]: this role can {escape(describe_risks(report.critical_risks))}. "
                      "Baton refuses to run model-written SQL as it. Create a read-only role: "
                      "baton db grant URL --schema S --apply")
        raise typer.Exit(1)
    if elevated:
        console.print(f"[bold red]CRITICAL[/bold red]: this role may call {len(elevated)} SECURITY DEFINER "
                      f"routine{'s' if len(elevated) > 1 else ''} whose owner holds more than it: the body runs with the "
                      "owner's rights. Baton refuses calls to them unless allowed by name (--allow-function schema.name); "
                      "revoke EXECUTE (baton db grant URL --schema S prints the statements).")
        raise typer.Exit(1)
    console.print("[bold green]OK[/bold green]: nothing critical; Baton will run model-written SQL as this role.")
    raise typer.Exit(0)


def _missing_file(connection: SQLConnection) -> str | None:
    """One line when a SQLite/DuckDB URL (an engine in this process) names no file (Baton
    never creates one)."""
    database = connection.url.database
    if not connection.kind.in_process or not database or database == ":memory:":
        return None
    if database.startswith("file:"):
        database = database[5:].split("?", 1)[0]
    if Path(database).is_file():
        return None
    return f"no database file at {database} (check the path; Baton opens files read-only and never creates one)"


def _print_definers(console: Console, routines: RoutineCatalog) -> None:
    definers = routines.definers
    if not definers:
        return
    table = Table(title="SECURITY DEFINER routines this role may call (calls refused unless allowed by name)")
    for column in ("", "routine", "owner", "owner holds", "EXECUTE via"):
        table.add_column(column, overflow="fold")
    for routine in definers:
        table.add_row("[bold red]critical[/bold red]" if routine.elevated else "[yellow]note[/yellow]",
                      escape(f"{routine.qualified}({routine.arguments})"), escape(routine.owner),
                      escape(", ".join(routine.owner_risks) or "nothing known beyond this role"),
                      escape(", ".join(routine.executable_via)))
    console.print(table)


@app.command("grant")
def grant(
    url: str = typer.Argument(..., help="An administrator's URL (PostgreSQL: a superuser, which temp_file_limit needs)."),
    schema: str = typer.Option(..., "--schema", help="PostgreSQL: the schema to read. MySQL/MariaDB: the database."),
    role: str = typer.Option("baton_reader", "--role", help="The role to create or reset."),
    password_env: str | None = typer.Option(None, "--password-env", help="Environment variable holding the role's password."),
    apply: bool = typer.Option(False, "--apply", help="Run the statements as the URL's role instead of printing them."),
    client_host: str = typer.Option("%", "--client-host", help="MySQL/MariaDB: the account's host part."),
    flavor: str | None = typer.Option(None, "--flavor", help="MySQL URLs: mariadb or mysql (default: ask the server)."),
    show_password: bool = typer.Option(False, "--show-password", help="Print the password instead of ********."),
) -> None:
    """Print (or, with --apply, run) the SQL that creates a least-privilege read-only role."""
    from baton.errors import BatonError
    from baton.specialists.sql.connection import engine_of
    from baton.specialists.sql.grants import (
        apply_grant_statements,
        definer_revokes,
        grant_statements,
        masked,
        role_url,
        server_flavor,
    )

    password = None
    if password_env:
        password = os.environ.get(password_env)
        if not password:
            raise _fail(f"--password-env {password_env}: that environment variable is not set or is empty")
    try:
        engine = engine_of(url)
        dialect = engine.name
        if flavor is None and engine.flavors:  # MySQL URLs: MariaDB or MySQL, as the server says
            flavor = server_flavor(url, connect_timeout=5)
        statements = grant_statements(url, schema, role, password, flavor=flavor, host=client_host)
    except BatonError as exc:
        raise _fail(str(exc)) from None
    try:
        revokes = definer_revokes(url, schema)
    except Exception as exc:
        if apply:
            raise _fail(f"could not list the definer routines PUBLIC may call: {exc}") from None
        revokes, unlisted = [], " ".join(str(exc).split())[:200]
    else:
        unlisted = ""
    if not apply:
        print(f"-- baton db grant: read-only role {role} on {schema} ({flavor or dialect}); run as an administrator")
        for statement in statements if show_password else masked(statements, password):
            print(statement + ";")
        if unlisted:
            print(f"-- the SECURITY DEFINER routines PUBLIC may call could not be listed ({unlisted}); "
                  "run `baton db check` as the new role")
        if revokes:
            print("-- SECURITY DEFINER routines executable by PUBLIC whose owner holds more than this role "
                  "(their bodies run with the owner's rights). These revokes change PUBLIC, for these routines only:")
            for statement in revokes:
                print(statement + ";")
        raise typer.Exit(0)
    try:  # an account this run creates is dropped again if a later statement fails (MySQL/MariaDB)
        apply_grant_statements(url, statements + revokes, schema=schema, account=(role, client_host))
    except BatonError as exc:
        raise _fail(str(exc)) from None
    except Exception as exc:  # the driver's error says which statement and why
        raise _fail(f"applying the grants failed: {' '.join(str(exc).split())}") from None
    new_url = role_url(url, role, password, schema).render_as_string(hide_password=True)
    console = Console(soft_wrap=True)
    console.print(f"[bold green]role {escape(role)} is ready[/bold green] ({len(statements)} statements applied).")
    if revokes:
        console.print(f"Revoked EXECUTE from PUBLIC on {len(revokes)} SECURITY DEFINER routine"
                      f"{'s' if len(revokes) > 1 else ''} whose owner holds more than this role:")
        for statement in revokes:
            console.print(f"  {escape(statement)}")
    console.print(f"Connect Baton with: {escape(new_url)}")
    console.print(f"Check it: baton db check {escape(new_url)}")
