"""Notebook rendering of an ``AIMessage``: the text, a table of the data, the chart, the SQL.

The table comes from ``data`` or, when a specialist left ``data`` empty, from ``results``;
its numbers are rounded for reading by ``baton.numbers.format_cell`` (the data stays exact).
The chart is ``viz_config`` rendered to inline SVG offline (``baton.viz.render_svg``); a
chart that cannot render is left out rather than hiding the answer.

``AIMessage._repr_html_`` (the protocol layer) does not import this module: it finds
``render_html`` through the ``baton.renderers`` entry point named ``text/html`` declared in
``pyproject.toml``, so the arrow runs from presentation to protocol only.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from baton.numbers import format_cell
from baton.viz.render import ChartRenderError, render_svg

if TYPE_CHECKING:
    from baton.response import AIMessage

MAX_ROWS = 50


def _rows(data: Any) -> list[dict[str, Any]]:
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        return data.head(MAX_ROWS).to_dict(orient="records")
    if isinstance(data, list):
        return [r for r in data[:MAX_ROWS] if isinstance(r, dict)]
    return []


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    columns = list(rows[0])
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(format_cell(str(c), r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(message: AIMessage) -> str:
    parts = [f"<div class='baton-answer'><p>{html.escape(message.content)}</p>"]
    if isinstance(message.data, dict):
        for agent, data in message.data.items():
            parts.append(f"<h4>{html.escape(str(agent))}</h4>{_table(_rows(data))}")
    elif message.data is not None:
        parts.append(_table(_rows(message.data)))
    elif message.results is not None:
        parts.append(_table(message.results.records()[:MAX_ROWS]))
        if message.results.row_count > MAX_ROWS:
            parts.append(f"<p><em>first {MAX_ROWS} of {message.results.row_count:,} rows</em></p>")
    if message.viz_config:
        try:
            parts.append(render_svg(message.viz_config))
        except ChartRenderError:  # a chart that cannot render must not hide the answer
            pass
    if message.query:
        parts.append(f"<pre><code>{html.escape(message.query)}</code></pre>")
    parts.append("</div>")
    return "".join(parts)
