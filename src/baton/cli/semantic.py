"""`baton semantic check|init`: a semantic model against a database, and a first draft of one.

- ``check FILE --database URL``: the model (Baton's YAML or a dbt MetricFlow file) is read
  and checked, then checked against the database (``baton.semantic.check``): every table,
  column and join exists, every metric compiles and runs (its total is printed), a sample of
  values per dimension, and every part of a MetricFlow project Baton does not compute yet
  (named, with file and line). Exit 0 when all is well, 1 with every problem or part not
  computed listed, 2 when the model cannot be read or the database cannot be used (one
  line, no traceback).
- ``init --database URL [--out FILE] [--checklist-json FILE]``: a draft model from the schema
  and the data (``baton.semantic.draft``: metrics named in words, counts, averages for prices,
  time through joins, labels, categorical dimensions), ready to ask; checked as a model
  before it is written. It prints what it decided and a checklist, one line per item
  (``- [ ] <kind>: <target>: <suggestion>``); ``--checklist-json`` writes the checklist with
  the edit that applies each item, for a script.

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
    from baton.specialists.sql.connection import SQLConnection

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
         name: str = typer.Option("draft", help="The model's name."),
         checklist_json: Path | None = typer.Option(None, "--checklist-json",
                                                    help="Write the checklist here as JSON (kind, target, suggestion, apply)."),
         unsafe_allow_privileged_role: bool = PrivilegedOption) -> None:
    """Draft a semantic model from a database's schema and data, ready to ask; print what it decided and what to check."""
    import json

    from baton.semantic.draft import draft_model, draft_text
    from baton.semantic.errors import SemanticModelError
    from baton.semantic.native import model_from_dict

    for option, path in (("--out", output), ("--checklist-json", checklist_json)):
        if path is not None and not path.parent.is_dir():  # before the draft's work, not a traceback after it
            err.print(f"[red]{option} {escape(str(path))}: there is no folder {escape(str(path.parent))}[/red]")
            raise typer.Exit(2)
    connection = _connection(database, unsafe_allow_privileged_role)

    async def run():
        try:
            return await draft_model(connection, name)
        finally:
            await connection.aclose()

    draft = asyncio.run(run())
    try:
        model_from_dict(draft.model)
    except SemanticModelError as exc:
        err.print(f"[red]the draft is not a usable model: {escape(str(exc))}[/red]")
        raise typer.Exit(1) from None
    text = draft_text(draft)
    if checklist_json is not None:
        checklist_json.write_text(json.dumps([item.to_dict() for item in draft.checklist], indent=2), encoding="utf-8")
    if output is None:
        print(text, end="")
    else:
        output.write_text(text, encoding="utf-8")
    said = err if output is None else out  # the YAML alone on standard output when it is printed
    said.print("[bold]decided:[/bold]")
    for decision in draft.decisions:
        said.print(f"  {escape(decision)}", highlight=False)
    said.print(f"[bold]checklist[/bold] ({len(draft.checklist)} to check):")
    for item in draft.checklist:
        said.print(escape(item.line), highlight=False)
    if output is not None:
        model = draft.model
        said.print(f"wrote {escape(str(output))}: {len(model['entities'])} entities, {len(model['metrics'])} metrics, "
                   f"{len(model['dimensions'])} dimensions (ask it now; check it with: baton semantic check {escape(str(output))} "
                   "--database ...)")
