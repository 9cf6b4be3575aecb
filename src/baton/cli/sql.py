"""`baton sql ...` commands.

``baton sql check`` answers one question without touching any database: would Baton let
this statement run? Exit status 0 means safe, 1 unsafe, 2 a usage error (an unknown
dialect, no SQL given), so scripts and CI can gate on it.
"""

from __future__ import annotations

import json
import logging
import sys

import typer
from rich.console import Console
from rich.markup import escape

app = typer.Typer(no_args_is_help=True)


@app.command("check")
def check(
    sql: str = typer.Argument(None, help='The statement to check; omit it or pass "-" to read standard input.'),
    dialect: str = typer.Option(..., "--dialect", "-d", help="sqlite, duckdb, postgres or mysql (mariadb)."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as one JSON object."),
    schemas: list[str] = typer.Option(
        [], "--schema", "-s",
        help="Allow reading only this schema (repeatable; the first is where unqualified names resolve), "
             "plus the introspection views. Without it only secret catalogs are refused."),
) -> None:
    """Print the safety verdict for one SQL statement (exit 0 safe, 1 unsafe)."""
    from baton.specialists.sql.engines import UnsupportedDialectError, normalize_dialect
    from baton.specialists.sql.safety import RelationPolicy, check_safety

    console = Console(soft_wrap=True)
    err = Console(stderr=True, soft_wrap=True)
    if sql is None or sql == "-":
        sql = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    if not sql.strip():
        err.print("[red]error:[/red] no SQL given (pass it as an argument or on standard input)")
        raise typer.Exit(2)
    try:
        dialect = normalize_dialect(dialect)
    except UnsupportedDialectError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}")
        raise typer.Exit(2) from None

    # sqlglot logs a warning for each statement it falls back to parsing as a Command;
    # the verdict already says so, so keep the terminal to the verdict.
    sqlglot_logger = logging.getLogger("sqlglot")
    previous = sqlglot_logger.level
    sqlglot_logger.setLevel(logging.ERROR)
    try:
        policy = RelationPolicy(frozenset(schemas), schemas[0]) if schemas else None
        verdict = check_safety(sql, dialect, relations=policy)
    finally:
        sqlglot_logger.setLevel(previous)

    if as_json:
        print(json.dumps({"safe": verdict.safe, "rule": verdict.rule, "reason": verdict.reason, "dialect": dialect}))
    elif verdict.safe:
        console.print(f"[bold green]SAFE[/bold green] ({dialect}): {escape(verdict.reason)}")
    else:
        console.print(f"[bold red]BLOCKED[/bold red] [red]{verdict.rule}[/red] ({dialect}): {escape(verdict.reason)}")
    raise typer.Exit(0 if verdict.safe else 1)
