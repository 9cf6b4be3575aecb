"""The ``baton`` command line (Typer + Rich).

Each command group lives in its own module and is attached in ``build_app``; importing this
package does nothing else. Every command's start-up refusals are handled once, at this edge
(``refusals.py``): one line on stderr, exit 2.
"""

from __future__ import annotations

import typer

__all__ = ["build_app", "main"]


def build_app() -> typer.Typer:
    from baton.cli import db, main_commands, memory, sql, worker

    app = typer.Typer(help="Baton: ask questions of your data through cooperating AI agents.", no_args_is_help=True)
    main_commands.register(app)
    from baton.cli import sessions  # baton sessions: the conversations, a page at a time
    sessions.register(app)
    from baton.cli import eval as eval_command  # baton eval: golden questions scored through the answer path
    eval_command.register(app)
    worker.register(app)
    from baton.cli import mcp as mcp_command  # baton mcp: the workspace as an MCP server over stdio
    mcp_command.register(app)
    app.add_typer(sql.app, name="sql", help="Check SQL safely: would Baton let this statement run? (nothing is run)")
    app.add_typer(memory.app, name="memory", help="Inspect and maintain the memory journal.")
    from baton.cli import verified  # baton verified list|add|remove: the questions answered without a model
    app.add_typer(verified.app, name="verified", help="List, add and remove verified questions (answered without a model).")
    app.add_typer(db.app, name="db", help="Check what a database role may do; create a read-only one.")
    from baton.cli import keys  # baton keys create|list|revoke: the API keys kept in the state
    app.add_typer(keys.app, name="keys", help="Create, list and revoke the API keys kept in the state (every replica on it accepts them).")
    from baton.cli import state  # baton state show|migrate: every family's schema version
    app.add_typer(state.app, name="state", help="Show or migrate the schema version of every family of the state.")
    from baton.cli import semantic  # baton semantic check|init: semantic models (metrics, dimensions) against a database
    app.add_typer(semantic.app, name="semantic", help="Check a semantic model against a database, or draft one from its schema.")
    from baton.cli import config  # baton init / baton config check: the baton.yaml project file
    app.command("init")(config.init)
    app.add_typer(config.app, name="config", help="Check a baton.yaml project file (baton init writes one).")
    from baton.cli.refusals import guard_commands  # a start-up refusal is one line and exit 2, for every command

    guard_commands(app)
    return app


def main() -> None:
    build_app()()
