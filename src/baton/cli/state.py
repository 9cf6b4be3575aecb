"""``baton state show|migrate``: the schema version of every family of Baton's state.

``show`` reads each family's version (nothing is created or changed); ``migrate`` brings
every family to this Baton's version, the same migrations a process runs when it first
opens a family, all at once: run it with the new version before a rolling upgrade, so no
replica starts on a half-upgraded state. State written by a newer Baton is refused (one
line, exit 2) and left as it is.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(no_args_is_help=True)
console = Console()
StateOption = typer.Option(None, "--state", help="Database URL of the shared state (default: $BATON_STATE_URL, else SQLite files in $BATON_HOME).")


def _where(url: str | None):
    from baton.state.location import State

    return State.from_env(url=url)


@app.command()
def show(state: str | None = StateOption) -> None:
    """Each family's schema version in the state, and the one this Baton writes."""
    from baton.state.versions import read

    where = _where(state)
    table = Table("family", "where", "state", "this Baton", "")
    for row in read(where):
        note = "newer: upgrade Baton" if row.newer else "older: baton state migrate" if 0 < row.found < row.known else ""
        table.add_row(row.family, row.where, str(row.found or "-"), str(row.known), note)
    console.print(f"state: {where.describe()}", soft_wrap=True)
    console.print(table)


@app.command()
def migrate(state: str | None = StateOption) -> None:
    """Bring every family of the state to this Baton's schema version."""
    from baton.state.versions import migrate_all

    where = _where(state)
    rows = migrate_all(where)
    for before, after in rows:
        change = "up to date" if before.found == after else f"{before.found or 'none'} -> {after}"
        console.print(f"{before.family} ({before.where}): {change}", soft_wrap=True)
    console.print(f"state {where.describe()}: every family at this Baton's version", soft_wrap=True)
