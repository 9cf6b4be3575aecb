"""`baton verified list|add|remove`: the questions a workspace answers without a model.

A verified question is a question -> SQL pair a person checked (``baton.workspace.verified``).
Without ``--database`` the commands act on the demo workspace (``$BATON_HOME/demo``, or the
shared state); with it, on the workspace over that database (the URL is checked first: one
line and exit 2 when it cannot be used).

- ``list``: every verified question, its specialist, its slots, where it came from and how
  many times it was answered (``--json`` for scripts);
- ``add QUESTION SQL``: the SQL is checked (safety check, one read-only run, slots bound)
  before anything is stored; exit 1 with the reason when it is refused. ``--slot year``
  lets the question's year vary ("... in 2024" runs the same SQL for 2024), ``--slot top``
  lets "top N" limit a ranked result, ``--slot unit_id=Pokemon:1,Epson:2`` lets the question
  name another choice (the SQL's ``unit_id = 1`` runs as ``unit_id = 2`` for "Epson"; each
  choice's SQL is checked and run once when it is added); ``SQL`` may be ``-`` to read
  standard input;
- ``remove QUESTION``: by its exact wording or its id (as ``list`` prints it); exit 1 when
  there is no such verified question.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

app = typer.Typer(no_args_is_help=True)
DatabaseOption = typer.Option(None, "--database", help="The workspace over this database URL (default: the demo).")
StateOption = typer.Option(None, "--state", help="Database URL of the shared state (default: $BATON_STATE_URL, else $BATON_HOME).")
err = Console(stderr=True, soft_wrap=True)


@contextlib.asynccontextmanager
async def _workspace(database: str | None, state: str | None, docs: Path | None = None,
                     privileged: bool = False) -> AsyncIterator[Any]:
    from baton.cli.main_commands import _state
    from baton.cli.specs import open_spec, with_flags

    spec = with_flags(None, database=database, docs=docs, privileged=privileged, state=state).model_copy(update={"pipelines": "off"})
    where = _state(spec.state)
    ws = await asyncio.to_thread(open_spec, spec, where, None)
    async with ws:
        yield ws


def _check(database: str | None, privileged: bool = False) -> None:
    if database:
        from baton.cli.database_check import refuse_unusable_database

        refuse_unusable_database(database, allow_privileged_role=privileged)


def parse_slot(text: str, question: str) -> Any:
    """``year`` (the question's year), ``year=2025``, ``top``, or a choice slot
    ``[NAME:]COLUMN=WORD[:LITERAL],...`` (the literal compared with ``COLUMN`` in the SQL;
    it is the word itself when not given; the question names one of the words)."""
    from baton.verified import Slot, SlotError

    name, _, value = text.partition("=")
    name = name.strip()
    if name.lower() == "top" and not value:
        return Slot("top", "limit")
    if name.lower() == "year" and (not value or re.fullmatch(r"\s*\d+\s*", value)):
        if not value:
            years = re.findall(r"(?<!\d)((?:19|20)\d\d)(?!\d)", question)
            if len(years) != 1:
                raise SlotError("--slot year needs exactly one year in the question (or say which: --slot year=2025)")
            value = years[0]
        return Slot("year", "year", value.strip())
    if not value:
        raise SlotError(f"unknown slot {text[:80]!r}: use year, year=YYYY, top or COLUMN=WORD,WORD,...")
    return _choice_slot(name, value, question)


def _choice_slot(name: str, value: str, question: str) -> Any:
    from baton.verified import MAX_CHOICES, Slot, SlotError

    slot_name, _, column = name.rpartition(":")
    column = column.strip()
    if slot_name and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", slot_name.strip()):
        raise SlotError(f"slot name {slot_name[:80]!r}: letters, digits and '_' only")
    items = value.split(",")
    if len(items) > MAX_CHOICES:
        raise SlotError(f"a choice slot has at most {MAX_CHOICES} choices, got {len(items)}")
    choices = []
    for item in items:
        word, sep, literal = item.partition(":")
        word, literal = word.strip(), literal.strip() if sep else word.strip()
        if not word or not literal:
            raise SlotError(f"choice {item[:80]!r}: WORD or WORD:LITERAL")
        choices.append((word, literal))
    slot = Slot(slot_name.strip() or column, "choice", choices[0][0], column=column, choices=tuple(choices))  # validates
    asked = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", question)}
    named = [word for word, _ in choices if word.lower() in asked]
    if len(named) != 1:
        said = "none" if not named else " and ".join(named)
        raise SlotError(f"--slot {slot.name}: the question must name exactly one of the choices (it names {said})")
    return replace(slot, default=named[0])


@app.command("list")
def list_(database: str | None = DatabaseOption, state: str | None = StateOption,
          as_json: bool = typer.Option(False, "--json", help="Print them as JSON.")) -> None:
    """List the verified questions."""
    from baton.workspace.verified import installed

    _check(database)

    async def run() -> list[dict[str, Any]]:
        async with _workspace(database, state) as ws:
            rows = []
            for v in installed(ws):
                used = 0
                if v.record_id and ws.memory is not None:
                    with contextlib.suppress(Exception):
                        used = ws.memory.get(ws.memory_scope(), v.record_id).times_applied
                rows.append({"id": v.record_id[:12], "question": v.question, "sql": v.sql, "specialist": v.agent,
                             "slots": [s.to_dict() for s in v.slots], "source": v.source, "answered": used})
            return rows

    rows = asyncio.run(run())
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    if not rows:
        Console().print('No verified questions yet. Add one: baton verified add "<question>" "<SQL>"'
                        + (f" --database {escape(database)}" if database else ""))
        return
    table = Table("id", "question", "specialist", "slots", "source", "answered", title="verified questions")
    for row in rows:
        slots = ", ".join(s["name"] for s in row["slots"]) or "-"
        table.add_row(row["id"], escape(row["question"]), row["specialist"], slots, row["source"] or "-",
                      f"{row['answered']} time" + ("" if row["answered"] == 1 else "s"))
    Console().print(table)


@app.command("add")
def add(question: str = typer.Argument(..., help="The question, as people ask it."),
        sql: str = typer.Argument(..., help='The SQL that answers it ("-" reads standard input).'),
        agent: str | None = typer.Option(None, "--agent", help="The specialist that answers it (needed when there are several)."),
        slots: list[str] = typer.Option([], "--slot", help="year, year=YYYY, top or [NAME:]COLUMN=WORD[:LITERAL],... (repeatable): what may vary."),
        database: str | None = DatabaseOption, state: str | None = StateOption,
        docs: Path | None = typer.Option(None, help="With --database: the workspace's documents folder."),
        unsafe_allow_privileged_role: bool = typer.Option(False, "--unsafe-allow-privileged-role",
                                                          help="Check the SQL even as a role that can read server files, run programs or read secrets.")) -> None:
    """Check and store a verified question (question -> SQL)."""
    from baton.cli.db import unsafe_privileged_role_opt_in
    from baton.verified import SlotError
    from baton.workspace.verified import VerifiedQuestionError, save_verified_question

    if sql == "-":
        sql = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    try:
        parsed = [parse_slot(s, question) for s in slots]
        names = [s.name for s in parsed]
        if len(set(names)) != len(names):
            raise SlotError(f"two slots named {next(n for n in names if names.count(n) > 1)!r}")
    except SlotError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    privileged = unsafe_privileged_role_opt_in(unsafe_allow_privileged_role)
    _check(database, privileged)

    async def run() -> Any:
        async with _workspace(database, state, docs, privileged) as ws:
            return await save_verified_question(ws, question, sql, agent=agent, slots=parsed, source="operator")

    try:
        saved = asyncio.run(run())
    except VerifiedQuestionError as exc:
        err.print(f"[red]refused:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    Console().print(f"verified: {escape(saved.question)} (answered by {saved.agent}, id {saved.record_id[:12]})")


@app.command("remove")
def remove(question: str = typer.Argument(..., help="The verified question's exact wording, or its id."),
           database: str | None = DatabaseOption, state: str | None = StateOption) -> None:
    """Stop answering a verified question (its history stays in the memory journal)."""
    from baton.workspace.verified import remove_verified_question

    _check(database)

    async def run() -> Any:
        async with _workspace(database, state) as ws:
            return await remove_verified_question(ws, question)

    removed = asyncio.run(run())
    if removed is None:
        err.print(f"[red]no verified question[/red] {escape(question)!r} (see `baton verified list`)")
        raise typer.Exit(1)
    Console().print(f"removed: {escape(removed.question)}")
