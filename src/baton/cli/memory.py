"""`baton memory ...`: inspect and maintain the memory journal.

The CLI is the operator's tool: whoever holds the database (file or URL) is trusted with
any workspace of it, so it opens scopes through ``TrustedAuthenticator``. The database
comes from ``--db``, else ``$BATON_MEMORY_URL``, else the shared state (``baton memory
--state URL ...`` or ``$BATON_STATE_URL``), else the demo's journal
(``$BATON_HOME/demo/memory.sqlite``, workspace ``demo``, so ``baton memory list`` right after
``baton demo`` shows what the demo knows); a missing SQLite file is an error (the CLI never creates an empty journal by accident).
``verify`` exits 1 when a chain does not verify; ``verify -w WS --expect-head SEQ:HASH``
also fails when that head (from a saved answer's ``memory_lock``, or a note of an earlier
``verify``) is gone: the one check that sees deletion of the newest events. ``rebuild``
reports whether the live projection already matched the journal before replacing it.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(no_args_is_help=True)
DbOption = typer.Option(None, "--db", help="SQLAlchemy URL of the memory database (default: $BATON_MEMORY_URL, else the state's: --state / $BATON_STATE_URL, else the demo's journal in $BATON_HOME)")
_state_url: str | None = None  # this invocation's --state


@app.callback()
def _options(state: str | None = typer.Option(None, "--state", help="Database URL of the shared state (default: $BATON_STATE_URL).")) -> None:
    """Inspect and maintain the memory journal."""
    global _state_url
    _state_url = state
WsOption = typer.Option("demo", "--workspace", "-w", help="Workspace to act on.")


def default_url() -> str:
    from baton.cli.main_commands import baton_home

    return f"sqlite:///{baton_home() / 'demo' / 'memory.sqlite'}"


def _state() -> str | None:
    from baton.errors import ConfigurationError
    from baton.settings import Settings
    from baton.state.location import normalise_url

    url = _state_url or Settings.from_env().state_url
    try:
        return normalise_url(url) if url else None
    except ConfigurationError as exc:
        Console(stderr=True).print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def _store(db: str | None):
    from baton.memory import MemoryStore, TrustedAuthenticator
    from baton.settings import Settings

    url = db or Settings.from_env().memory_url or _state() or default_url()
    if url.startswith("sqlite:///") and not os.path.exists(url[len("sqlite:///"):]):
        Console(stderr=True).print(f"[red]no memory database at {url}[/red]")
        raise typer.Exit(2)
    return MemoryStore(url, authenticator=TrustedAuthenticator())


def _scope(store, workspace: str):
    from baton.memory import Principal, WorkspaceAccessError

    try:
        return store.open(Principal(workspace, user_id="operator"))
    except WorkspaceAccessError as exc:
        Console(stderr=True).print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


@app.command("list")
def list_(db: str | None = DbOption, workspace: str = WsOption,
          kind: str | None = typer.Option(None, help="learning | note | insight | benchmark | doctrine"),
          all_: bool = typer.Option(False, "--all", help="Include inactive (superseded, deactivated, expired) records."),
          limit: int = typer.Option(50, help="At most this many rows.")) -> None:
    """List records, most confident first."""
    store = _store(db)
    records = store.list_records(_scope(store, workspace), kind=kind, active_only=not all_, limit=limit)
    table = Table("id", "kind", "status", "conf", "subject", "text", title=f"memory of {workspace!r}")
    for rec in records:
        table.add_row(rec.id[:12], rec.kind, rec.status, f"{rec.confidence:.2f}", f"{rec.entity} / {rec.attribute}",
                      rec.text if len(rec.text) < 90 else rec.text[:87] + "...")
    Console().print(table)


def _resolve(store, scope, record_id: str) -> str:
    """Accept a unique id prefix (as ``list`` prints 12 characters)."""
    if len(record_id) >= 32:
        return record_id
    matches = store.resolve_id(scope, record_id)
    if len(matches) == 1:
        return matches[0]
    Console(stderr=True).print(f"[red]{'no' if not matches else 'more than one'} record matches {record_id!r}[/red]")
    raise typer.Exit(2)


@app.command()
def show(record_id: str, db: str | None = DbOption, workspace: str = WsOption) -> None:
    """One record and its full history from the journal."""
    from baton.memory import RecordNotFoundError

    store = _store(db)
    scope = _scope(store, workspace)
    console = Console()
    try:
        rid = _resolve(store, scope, record_id)
        history = store.history(scope, rid)
    except RecordNotFoundError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    try:
        rec = store.get(scope, rid)
        console.print(f"[bold]{rec.kind}[/bold] {rec.id}  [{rec.status}]  confidence {rec.confidence:.2f}"
                      f"  applied {rec.times_applied}x" + ("  verified" if rec.verified else "") + ("  STALE" if rec.stale else ""))
        console.print(f"  {rec.text}")
        console.print(f"  entity={rec.entity} attribute={rec.attribute} scope={rec.scope} value={rec.value!r}"
                      f" connection={rec.connection_id}")
        if rec.superseded_by:
            console.print(f"  superseded by {rec.superseded_by}")
        if rec.supersedes:
            console.print(f"  supersedes {', '.join(rec.supersedes)}")
    except RecordNotFoundError:
        console.print(f"[yellow]{rid} was forgotten; its content is erased, its history remains:[/yellow]")
    table = Table("seq", "v", "time (UTC)", "event", "payload", "provenance", title="history")
    for e in history:
        payload = "(erased)" if e.erased else json.dumps(e.payload)[:80]
        table.add_row(str(e.seq), str(e.version), _when(e.recorded_at), e.type, payload, json.dumps(e.provenance)[:60])
    console.print(table)


@app.command()
def forget(record_id: str, db: str | None = DbOption, workspace: str = WsOption,
           reason: str = typer.Option("", help="Why (kept in the tombstone)."),
           yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Erase a record: tombstone in the journal, content removed for good."""
    store = _store(db)
    scope = _scope(store, workspace)
    rid = _resolve(store, scope, record_id)
    if not yes and not typer.confirm(f"Erase the content of {rid} permanently?"):
        raise typer.Exit(1)
    erased = store.forget(scope, rid, reason=reason)
    Console().print(f"forgot {rid}: {erased} payload(s) erased, tombstone appended")


@app.command()
def rebuild(db: str | None = DbOption,
            workspace: str | None = typer.Option(None, "--workspace", "-w", help="Only this workspace (default: all).")) -> None:
    """Recreate the projections from the journal alone."""
    store = _store(db)
    console = Console()
    for ws in [workspace] if workspace else store.list_workspaces():
        report = store.rebuild(_scope(store, ws))
        state = "matched" if not report.differences_before else f"differed in {len(report.differences_before)}+ records"
        console.print(f"{ws}: {report.events} events -> {report.records} records in {report.seconds:.2f}s "
                      f"(live projection {state} before)")
        for line in report.differences_before[:10]:
            console.print(f"  {line}")


@app.command()
def verify(db: str | None = DbOption,
           workspace: str | None = typer.Option(None, "--workspace", "-w", help="Only this workspace (default: all)."),
           expect_head: str | None = typer.Option(
               None, "--expect-head", help="SEQ:HASH or HASH of a head seen earlier (a saved answer's memory_lock): "
                                           "fail if it is no longer in the chain. Needs --workspace.")) -> None:
    """Verify each workspace's hash chain and payload hashes."""
    from baton.memory import InvalidRecordError
    from baton.memory.journal import anchor_of

    err = Console(stderr=True)
    anchor = None
    if expect_head is not None:
        if not workspace:
            err.print("[red]--expect-head anchors one workspace: give --workspace[/red]")
            raise typer.Exit(2)
        try:
            anchor = anchor_of(expect_head)
        except InvalidRecordError as exc:
            err.print(f"[red]--expect-head: {exc}[/red]")
            raise typer.Exit(2) from None
    store = _store(db)
    console = Console()
    failed = False
    for ws in [workspace] if workspace else store.list_workspaces():
        report = store.verify(_scope(store, ws), expected_head=anchor)
        mark = "[green]ok[/green]" if report.ok else "[red]BROKEN[/red]"
        anchored = {None: "", True: ", anchored head present", False: ", anchored head MISSING"}[report.anchored]
        console.print(f"{ws}: {mark} {report.events} events, {report.erased_payloads} erased payloads, "
                      f"head {report.last_seq}:{report.head_hash}{anchored}")
        for problem in report.problems[:20]:
            console.print(f"  {problem}")
        failed |= not report.ok
    if failed:
        raise typer.Exit(1)
