"""`baton semantic check|init`: a semantic model against a database, and a first draft of one.

- ``check FILE --database URL``: the model (Baton's YAML or a dbt MetricFlow file) is read
  and checked, then checked against the database (``baton.semantic.check``): every table,
  column and join exists, every metric compiles and runs (its total is printed), a sample of
  values per dimension, and every part of a MetricFlow project Baton does not compute yet
  (named, with file and line). Exit 0 when all is well, 1 with every problem or part not
  computed listed, 2 when the model cannot be read or the database cannot be used (one
  line, no traceback).
- ``init --database URL [--out FILE]``: a draft model from the schema (foreign keys -> joins,
  numeric columns -> measures and metrics, dates -> time, text -> dimensions), printed or
  written, for a person to edit; it is checked as a model before it is written.

The database is read through the same read-only connection and safety check as any
question (``--unsafe-allow-privileged-role`` as on ``baton ask``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

app = typer.Typer(no_args_is_help=True)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
DatabaseOption = typer.Option(..., "--database", help="SQLAlchemy URL of the database the model describes.")
PrivilegedOption = typer.Option(False, "--unsafe-allow-privileged-role",
                                help="Read through a role that can read server files, run programs or read secrets.")


def _connection(database: str, privileged: bool):
    from baton.cli.database_check import refuse_unusable_database
    from baton.specialists.sql.engines import SQLConnection

    refuse_unusable_database(database, allow_privileged_role=privileged)  # one line and exit 2 when unusable
    return SQLConnection(database, id="semantic", allow_privileged_role=privileged)


@app.command()
def check(file: Path = typer.Argument(..., help="The semantic model: Baton's YAML, or a dbt MetricFlow project "
                                                "(its directory, a YAML file or a semantic_manifest.json)."),
          database: str = DatabaseOption, unsafe_allow_privileged_role: bool = PrivilegedOption) -> None:
    """Check a semantic model against a database: tables, columns, joins, every metric run."""
    from baton.semantic.check import check_model
    from baton.semantic.errors import SemanticModelError
    from baton.semantic.loading import load_model

    try:
        model = load_model(file)
    except SemanticModelError as exc:
        err.print(f"[red]{escape(str(file))}: {escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    connection = _connection(database, unsafe_allow_privileged_role)

    async def run():
        try:
            return await check_model(model, connection)
        finally:
            await connection.aclose()

    report = asyncio.run(run())
    table = Table(title=f"semantic model {escape(model.name)}: metrics")
    table.add_column("metric")
    table.add_column("runs")
    table.add_column("total or error")
    for name, ran, value in report.metrics:
        table.add_row(escape(name), "[green]yes[/green]" if ran else "[red]no[/red]", escape(value))
    out.print(table)
    for name, values in report.samples.items():
        out.print(f"dimension [bold]{escape(name)}[/bold]: {escape(', '.join(map(str, values))) or '(no values)'}")
    if report.years:
        out.print(f"time: {report.years[0]}-{report.years[-1]}")
    for problem in report.problems:
        out.print(f"[red]problem:[/red] {escape(problem)}")
    for refused in report.refused:
        out.print(f"[red]not computed:[/red] {escape(refused)}")
    failed = sum(1 for _, ran, _ in report.metrics if not ran)
    computed = f"{len(model.entities)} entities, {len(model.metrics)} metrics, {len(model.dimensions)} dimensions computed"
    if report.ok:
        out.print(f"[green]ok[/green]: {computed}")
    else:
        out.print(f"[red]{len(report.problems)} problem(s), {failed} metric(s) that do not run, {len(report.refused)} part(s) "
                  f"of the model Baton does not compute yet[/red] ({computed}; questions that need the others are refused by name)")
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def init(database: str = DatabaseOption, output: Path | None = typer.Option(None, "--out", help="Write the draft here."),
         name: str = typer.Option("draft", help="The model's name."), unsafe_allow_privileged_role: bool = PrivilegedOption) -> None:
    """Draft a semantic model from a database's schema, for you to edit."""
    import yaml

    from baton.semantic.check import DRAFT_HEADER, draft_model
    from baton.semantic.errors import SemanticModelError
    from baton.semantic.native import model_from_dict

    connection = _connection(database, unsafe_allow_privileged_role)

    async def run():
        try:
            return await draft_model(connection, name)
        finally:
            await connection.aclose()

    draft = asyncio.run(run())
    try:
        model_from_dict(draft)
    except SemanticModelError as exc:
        err.print(f"[red]the draft is not a usable model: {escape(str(exc))}[/red]")
        raise typer.Exit(1) from None
    text = DRAFT_HEADER + yaml.safe_dump(draft, sort_keys=False, allow_unicode=True)
    if output is None:
        print(text, end="")
        return
    output.write_text(text, encoding="utf-8")
    err.print(f"wrote {escape(str(output))}: {len(draft['entities'])} entities, {len(draft['metrics'])} metrics, "
              f"{len(draft['dimensions'])} dimensions (edit it, then: baton semantic check {escape(str(output))} --database ...)")
