"""``baton sessions``: the demo workspace's conversations, listed a page at a time or printed one."""

from __future__ import annotations

import asyncio

import typer

from baton.cli import main_commands  # its _model / _state, looked up at call time (tests replace _model)
from baton.cli.main_commands import StateOption, console
from baton.cli.render import print_answer


def register(app: typer.Typer) -> None:
    app.command()(sessions)


def sessions(
    show: str | None = typer.Argument(None, help="A session id to print in full."),
    limit: int = typer.Option(50, "--limit", min=1, help="List at most this many, newest first."),
    every: bool = typer.Option(False, "--all", help="List every conversation."),
    state: str | None = StateOption,
) -> None:
    """List the demo workspace's conversations (the newest 50; --limit, --all), or print one."""
    from rich.markup import escape

    from baton.cli.serving import local_workspace
    from baton.cli.specs import with_flags
    from baton.state.conversations import SessionNotFound

    async def run() -> int:
        async with local_workspace(with_flags(None), main_commands._model(), main_commands._state(state)) as ws:
            if show is None:
                listed = await ws.sessions.list(ws.name, None if every else limit)
                if not listed:
                    console.print('No conversations yet: ask a question (baton ask "...") or open the page (baton demo).')
                for s in listed:
                    turns = f"{s.turns} turn" + ("" if s.turns == 1 else "s")
                    console.print(f"[bold]{s.session_id}[/bold]  {s.updated_at[:19]}  {turns}  {escape(s.title)}")
                total = len(listed) if every or len(listed) < limit else await ws.sessions.count(ws.name)
                if total > len(listed):
                    console.print(f"showing {len(listed)} of {total}; --all to list every one")
                return 0
            try:
                history = await ws.sessions.turns(ws.name, show)
            except SessionNotFound:
                console.print(f"no conversation {escape(show)!r} in workspace {ws.name}: `baton sessions` lists them",
                              soft_wrap=True)
                return 1
            for turn in history:
                console.rule(f"[bold]{turn.question}")
                print_answer(console, turn.answer)
            return 0

    code = asyncio.run(run())
    if code:
        raise typer.Exit(code)
