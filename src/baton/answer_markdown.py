"""An answer as Markdown, for surfaces that only show text (chat clients, the terminal's
plain mode): the text, then each dataset as a table, then the SQL behind it,
then any staleness warning."""

from __future__ import annotations

from typing import Any

from baton.response import AIMessage

MAX_ROWS = 20


def _rows(data: Any) -> tuple[list[dict[str, Any]], int]:
    """The rows to show (at most MAX_ROWS) and how many there are in all."""
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        return data.head(MAX_ROWS).to_dict(orient="records"), len(data)
    if isinstance(data, list):
        rows = [r for r in data if isinstance(r, dict)]
        return rows[:MAX_ROWS], len(rows)
    return [], 0


def table(rows: list[dict[str, Any]], total: int | None = None) -> str:
    if not rows:
        return ""
    total = len(rows) if total is None else total
    columns = list(rows[0])
    lines = ["| " + " | ".join(map(str, columns)) + " |", "|" + "---|" * len(columns)]
    for row in rows[:MAX_ROWS]:
        lines.append("| " + " | ".join([str(row.get(c, "")).replace("|", "\\|") for c in columns]) + " |")  # a list: faster than a generator
    if total > MAX_ROWS:
        lines.append(f"\n_{total - MAX_ROWS} more rows not shown_")
    return "\n".join(lines)


def to_markdown(message: AIMessage) -> str:
    parts = [message.content.strip()] if message.content.strip() else []
    if isinstance(message.data, dict):
        for name, data in message.data.items():
            rendered = table(*_rows(data))
            if rendered:
                parts.append(f"**{name}**\n\n{rendered}")
    else:
        rendered = table(*_rows(message.data))
        if rendered:
            parts.append(rendered)
    if message.query:
        parts.append(f"```sql\n{message.query}\n```")
    if message.error and message.error not in message.content:
        parts.append(f"_Error: {message.error}_")
    if message.staleness_warning:  # a chat client has no other place to show it
        parts.append(f"> ⚠ {message.staleness_warning}")
    return "\n\n".join(parts)
