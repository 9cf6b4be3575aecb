"""Top-level commands: ``demo``, ``ask``, ``serve``, ``agents``."""

from __future__ import annotations

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    @app.command()
    def demo() -> None:
        """Build the demo workspace and serve it (the finance case of seed 000)."""
        console = Console()
        console.print("[bold]Baton[/bold] demo: the demo workspace is not built yet; available so far:")
        console.print(" - baton sql check --dialect D \"SQL\"   safety verdict for a query")
        console.print(" - baton memory ...                     the memory journal")
