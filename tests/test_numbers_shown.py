"""Where numbers reach a person, a small nonzero value reads nonzero: the terminal's table, the
notebook's HTML, the SQL specialist's one-value answer and insight sentences. Exports keep
exact values."""

from __future__ import annotations

import io
import json
import re

from rich.console import Console

from baton.cli.render import print_answer
from baton.response import AIMessage, QueryResult
from baton.specialists.sql.agent import _summary
from baton.viz.insights import find_insights
from baton.viz.notebook import render_html

ROWS = [{"region": "north", "year": 2024, "revenue": 1234567.891, "ratio": 0.0012345, "tiny": 1.2e-8},
        {"region": "south", "year": 2025, "revenue": 56.7, "ratio": -0.004, "tiny": 0.0}]
ZERO_LOOKING = re.compile(r"(?<![\d.])-?0\.0+(?![\d.e])")  # "0.00", "-0.0": a rounded-away value


def test_the_terminal_table_shows_small_values_as_nonzero():
    out = io.StringIO()
    print_answer(Console(file=out, width=200), AIMessage(content="Two regions.", data=ROWS))
    text = out.getvalue()
    for shown in ("0.00123", "-0.004", "1.2e-08", "1,234,567.89", "56.70", "2024"):
        assert shown in text
    assert not ZERO_LOOKING.search(text) and "2,024" not in text


def test_the_notebook_table_shows_small_values_as_nonzero():
    page = render_html(AIMessage(content="Two regions.", data=ROWS))
    cells = re.findall(r"<td>(.*?)</td>", page)
    assert cells[:5] == ["north", "2024", "1,234,567.89", "0.00123", "1.2e-08"]
    assert cells[5:] == ["south", "2025", "56.70", "-0.004", "0"]
    results = QueryResult(["ratio"], [[0.0012345]])
    assert "<td>0.00123</td>" in render_html(AIMessage(content="A ratio.", results=results))


def test_a_one_value_answer_names_the_value_readably():
    assert _summary(QueryResult(["conversion"], [[0.0012345]]), "Conversion.") == "Conversion. Result: 0.00123"
    assert _summary(QueryResult(["fiscal_year"], [[2024]]), "Year.") == "Year. Result: 2024"


def test_the_answer_keeps_the_exact_values_for_export():
    message = AIMessage(content="Two regions.", data=ROWS)
    assert json.loads(message.to_json())["data"][0]["ratio"] == 0.0012345


def test_insights_never_round_a_small_share_or_change_to_zero():
    shares = QueryResult(["category", "revenue"], [["ink", 1_000_000.0], ["paper", 999_000.0], ["pens", 12.0]])
    [top] = [i for i in find_insights(shares) if i["kind"] == "top_share"]
    assert "50.0%" in top["text"]
    rates = QueryResult(["month", "conversion"], [[f"2024-{m:02d}", 0.001 + (0.0004 if m == 7 else 0.0)] for m in range(1, 13)])
    changes = [i for i in find_insights(rates) if i["kind"] == "largest_change"]
    assert changes and "by 0.0004 (+40.0%)" in changes[0]["text"]
    tiny = QueryResult(["category", "revenue"], [["ink", 1_000_000.0], ["pens", 0.5]])
    [alone] = [i for i in find_insights(tiny) if i["kind"] == "top_share"]
    assert "next largest 0.00005%" in alone["tooltip"] and "0.0%" not in alone["tooltip"]
