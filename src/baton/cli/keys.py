"""`baton keys create|list|revoke`: the API keys kept in the state (``baton.state.keystore``).

Every process serving on the same state (``--state`` / ``$BATON_STATE_URL``, else SQLite files
in ``$BATON_HOME``) asks the store for a key it does not hold, on every request, so a key made
here works on running replicas at once and a revoked one stops working at once; no restart.
Servers started with ``BATON_API_KEYS`` accept exactly those keys and never read the store.

- ``create``: prints the new key on stdout, alone (``KEY=$(baton keys create -w database)``),
  and only this once: the store keeps its SHA-256 digest;
- ``list``: each key's id (the first 12 hex characters of its digest), workspace, label, when
  it was created and revoked (``--json`` for scripts); never a key;
- ``revoke ID``: the id, or more of the digest (at least 8 hex characters), must name exactly
  one live key of the workspace: exit 2 when it is malformed or names several, 1 when it
  names none. Revoking a workspace's default key (the one ``baton serve`` prints) is allowed:
  the next start makes and prints a new default key.

Operator mistakes are one line on stderr and exit 2, as elsewhere in the CLI.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

app = typer.Typer(no_args_is_help=True)
StateOption = typer.Option(None, "--state", help="Database URL of the shared state (default: $BATON_STATE_URL, else SQLite files in $BATON_HOME).")
err = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 2) -> NoReturn:
    err.print(f"[red]{escape(message)}[/red]")
    raise typer.Exit(code)


def _state(url: str | None) -> Any:
    from baton.errors import ConfigurationError
    from baton.state.location import State

    try:
        where = State.from_env(url=url)
    except ConfigurationError as exc:
        _fail(str(exc))
    return where.check_versions()  # state a newer Baton wrote: one line, exit 2 (refusals.py)


def _store(url: str | None, *, create: bool = True) -> Any:
    """The key store of the state; None when the embedded state has no key file yet and
    ``create`` is False (listing or revoking makes no files)."""
    from sqlalchemy.exc import SQLAlchemyError

    from baton.state.location import KEYS_FILE

    where = _state(url)
    if where.embedded and not create and not (where.home / KEYS_FILE).exists():
        return None
    try:
        return where.keys()
    except SQLAlchemyError as exc:
        _fail(f"cannot open the key store in {where.describe()}: {type(exc).__name__}")


def _checked(check: Any, value: str) -> str:
    from baton.state.keystore import KeyInputError

    try:
        return str(check(value))
    except KeyInputError as exc:
        _fail(str(exc))


def _show(text: str | None) -> str:
    """Stored text for the terminal: markup escaped, control characters made visible."""
    if text is None:
        return "-"
    return escape(text if text.isprintable() else repr(text))


def _when(stamp: str | None) -> str:
    """An ISO timestamp (UTC) to the second."""
    return _show(stamp[:19].replace("T", " ") if stamp else None)


def _workspace_checked(workspace: str) -> str:
    from baton.state.keystore import check_workspace

    return _checked(check_workspace, workspace)


@app.command("create")
def create(workspace: str = typer.Option(..., "--workspace", "-w", help="The workspace the key opens (`baton serve --database` serves \"database\"; the demo, \"demo\")."),
           label: str = typer.Option("", "--label", help="What the key is for (who holds it), shown by `list`."),
           state: str | None = StateOption) -> None:
    """Make a key: printed on stdout once, kept only as its digest."""
    from baton.state.keys import digest
    from baton.state.keystore import check_label

    workspace = _workspace_checked(workspace)
    label = _checked(check_label, label)
    store = _store(state)
    try:
        key = store.create(workspace, label)
    finally:
        store.close()
    print(key)
    err.print(f"Key {digest(key)[:12]} for workspace {escape(workspace)}: shown only now (Baton keeps its digest); "
              "servers on this state accept it from their next request.")
    from baton.settings import Settings

    if Settings.from_env().api_keys:
        err.print("Note: BATON_API_KEYS is set here; servers started with it accept only those keys, not this one.")


@app.command("list")
def list_(workspace: str | None = typer.Option(None, "--workspace", "-w", help="Only this workspace's keys."),
          state: str | None = StateOption,
          as_json: bool = typer.Option(False, "--json", help="Print them as JSON.")) -> None:
    """List the keys (their ids, never the keys)."""
    if workspace is not None:
        workspace = _workspace_checked(workspace)
    store = _store(state, create=False)
    rows: list[dict[str, Any]] = []
    if store is not None:
        try:
            rows = store.list(workspace)
        finally:
            store.close()
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    if not rows:
        Console().print("No keys yet. Make one: baton keys create --workspace NAME")
        return
    table = Table("id", "workspace", "label", "created (UTC)", "revoked (UTC)", title="API keys")
    for row in rows:
        label = _show(row["label"]) + (" (default)" if row["default"] else "")
        table.add_row(row["id"], _show(row["workspace"]), label, _when(row["created_at"]), _when(row["revoked_at"]))
    Console().print(table)


@app.command("revoke")
def revoke(key_id: str = typer.Argument(..., metavar="ID", help="The key's id as `list` prints it (at least 8 hex characters of its digest)."),
           workspace: str = typer.Option(..., "--workspace", "-w", help="The workspace whose key it is."),
           state: str | None = StateOption) -> None:
    """Revoke one key: servers on this state refuse it from their next request."""
    from baton.state.keystore import check_prefix

    prefix = _checked(check_prefix, key_id)
    workspace = _workspace_checked(workspace)
    store = _store(state, create=False)
    if store is None:
        _fail(f"Revoked 0 keys: no key in workspace {workspace} has an id starting {prefix} (no keys yet)", 1)
    try:
        matches = store.live(prefix, workspace)
        if len(matches) > 1:
            _fail(f"id {prefix} names {len(matches)} live keys of workspace {workspace}: give more of it "
                  f"(baton keys list --workspace {workspace})")
        if not matches:
            _fail(f"Revoked 0 keys: no live key in workspace {workspace} has an id starting {prefix}", 1)
        (match,) = matches
        revoked = store.revoke(match["digest"], workspace)  # the full digest: exactly this key
    finally:
        store.close()
    Console().print(f"Revoked {revoked} key{'' if revoked == 1 else 's'} ({match['digest'][:12]}, label "
                    f"{_show(match['label'])}) of workspace {escape(workspace)}: servers on this state refuse it from their next request.")
    if match["default"]:
        err.print("It was the workspace's default key: `baton serve` makes and prints a new one at its next start "
                  "(a running `baton demo` holds its key in memory and accepts it until it restarts).")
