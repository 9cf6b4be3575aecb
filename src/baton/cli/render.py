"""An answer in the terminal: text, a Rich table per dataset, the SQL, and follow-ups."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from baton.numbers import format_cell
from baton.response import AIMessage

MAX_ROWS = 25


def _rows(data: Any) -> list[dict[str, Any]]:
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        return data.to_dict(orient="records")
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def _table(rows: list[dict[str, Any]], title: str | None = None) -> Table | None:
    if not rows:
        return None
    table = Table(title=title, show_lines=False)
    columns = list(rows[0])
    for column in columns:
        numeric = all(isinstance(r.get(column), (int, float, Decimal)) and not isinstance(r.get(column), bool)
                      for r in rows[:20] if r.get(column) is not None)
        table.add_column(str(column), justify="right" if numeric else "left")
    for row in rows[:MAX_ROWS]:
        table.add_row(*(format_cell(str(c), row.get(c)) for c in columns))  # exact values, rounded only here
    if len(rows) > MAX_ROWS:
        table.caption = f"{len(rows) - MAX_ROWS} more rows"
    return table


def print_answer(console: Console, answer: AIMessage) -> None:
    if answer.error:
        console.print(f"[red]{answer.content or answer.error}[/red]")
    elif answer.content:
        console.print(answer.content, markup=False, highlight=False)
    if isinstance(answer.data, dict):
        for name, data in answer.data.items():
            table = _table(_rows(data), title=name)
            if table:
                console.print(table)
    else:
        table = _table(_rows(answer.data))
        if table:
            console.print(table)
    if answer.query:
        console.print(Syntax(answer.query, "sql", word_wrap=True))
    meta = answer.metadata
    details = [f"answered by {meta['routed_to']}" if meta.get("routed_to") else None,
               "no LLM call" if meta.get("llm_calls") == 0 else None,
               f"session {answer.session_id}" if answer.session_id else None]
    line = " · ".join(d for d in details if d)
    if line:
        console.print(f"[dim]{line}[/dim]")
    if answer.staleness_warning:
        console.print(f"[yellow]{escape(answer.staleness_warning)}[/yellow]")
    if answer.suggested_followups:
        console.print("[dim]Follow-ups: " + " | ".join(answer.suggested_followups) + "[/dim]")


CHART_SUFFIXES = (".svg", ".png")


def check_chart_path(path: Path) -> Path:
    """``--chart FILE``, checked before the question is asked (a refusal, one line and exit 2,
    rather than a traceback after the answer): an .svg or .png file in a folder that exists."""
    from baton.errors import StartupRefusal

    if path.is_dir():
        raise StartupRefusal(f"--chart {path}: that is a folder", f"name a file in it, such as {path / 'chart.svg'}")
    if path.suffix.lower() not in CHART_SUFFIXES:
        raise StartupRefusal(f"--chart {path}: a chart is written as .svg or .png", f"name a file such as {path.with_suffix('.svg')}")
    if not path.parent.is_dir():
        raise StartupRefusal(f"--chart {path}: there is no folder {path.parent}", "create it first, or name a file in an existing folder")
    return path


def write_chart(console: Console, answer: AIMessage, path: Path) -> None:
    """Write the answer's chart to ``path`` (``check_chart_path``); a file that cannot be
    written (no permission, a full disk) is a refusal too."""
    from baton.errors import StartupRefusal

    if not answer.viz_config:
        console.print("[yellow]This answer has no chart to write.[/yellow]")
        return
    from baton.viz import render_png, render_svg

    try:
        if path.suffix.lower() == ".png":
            path.write_bytes(render_png(answer.viz_config))
        else:
            path.write_text(render_svg(answer.viz_config), encoding="utf-8")
    except OSError as exc:
        raise StartupRefusal(f"--chart {path}: cannot write it ({exc.strerror or exc})", "name a file you may write") from None
    console.print(f"Chart ({answer.viz_type}) written to {path}")
