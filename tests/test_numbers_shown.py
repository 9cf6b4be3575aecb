"""Where numbers reach a person, a small nonzero value reads nonzero: the terminal's table, the
notebook's HTML, the SQL specialist's one-value answer, insight sentences, and the charts'
tooltips and big numbers (the d3 formats run through the page's own vendored Vega, under
Node). Exports keep exact values."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from rich.console import Console

from baton.cli.render import print_answer
from baton.response import AIMessage, QueryResult
from baton.specialists.sql.agent import _summary
from baton.viz import choose_chart, render_svg
from baton.viz.insights import find_insights
from baton.viz.notebook import render_html
from baton.viz.spec import SHARE, VALUE
from test_numbers import STATIC, needs_node, run_node

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


def _svg_texts(svg: str) -> list[str]:
    return [t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text") if t.text]


def test_a_big_number_of_a_small_value_is_drawn_nonzero():
    spec = choose_chart(QueryResult(["conversion"], [[0.0012345]])).viz_config
    assert "0.00123" in _svg_texts(render_svg(spec))


# Each quantitative tooltip / text entry of a spec, with the values it will be asked to show.
def _formatted_fields(spec: dict[str, Any]) -> list[tuple[str, list[float]]]:
    values = spec["data"]["values"]
    encoding = spec["encoding"]
    entries = [*encoding.get("tooltip", []), *([encoding["text"]] if "text" in encoding else [])]
    out = []
    for entry in entries:
        if entry.get("type") != "quantitative":
            continue
        field = entry["field"].replace("\\", "")
        if field == VALUE:  # folded measures: every measure's values
            column = [v[f] for v in values for f in spec["transform"][0]["fold"]]
        else:
            column = [v[field] for v in values]
        out.append((entry["format"], [x for x in column if isinstance(x, (int, float))]))
    return out


D3_FORMAT = """
const vega = require(%s);
const fields = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(fields.map(([format, values]) => values.map((v) => vega.locale().format(format)(v)))));
"""

CHARTS = [
    ("bar", QueryResult(["region", "revenue"], [["a", 1234.5], ["b", 0.0012], ["c", 56.7], ["d", -0.004]]), None),
    ("line", QueryResult(["month", "revenue", "cost"], [[f"2024-{m:02d}", 1000.0 + m, 0.001 * m] for m in range(1, 13)]), None),
    ("pie", QueryResult(["segment", "revenue"], [["a", 1000.0], ["b", 0.05], ["c", 500.0]]), "each segment's share of revenue"),
    ("percent", QueryResult(["month", "conversion_rate"], [[f"2024-{m:02d}", 0.00001 * m] for m in range(1, 13)]), None),
    ("big number", QueryResult(["average"], [[0.000000012]]), None),
]


@needs_node
@pytest.mark.parametrize("result,question", [c[1:] for c in CHARTS], ids=[c[0] for c in CHARTS])
def test_chart_tooltips_show_every_value_nonzero_with_three_significant_digits(result, question):
    spec = choose_chart(result, question=question).viz_config
    fields = _formatted_fields(spec)
    assert fields, "no formatted numbers in the spec"
    shown = run_node(D3_FORMAT % json.dumps(str(STATIC / "vendor" / "vega.min.js")), fields)
    for (format_, values), texts in zip(fields, shown):
        for value, text in zip(values, texts):
            number = float(text.replace("\u2212", "-").replace(",", "").rstrip("%")) / (100 if text.endswith("%") else 1)
            assert (number == 0) == (value == 0), (format_, value, text)
            assert abs(number - value) <= 0.005 * abs(value) * (1 + 1e-9), (format_, value, text)
    if "pie" in spec["usermeta"]["baton"]["viz_type"]:
        assert any(entry["field"] == SHARE for entry in spec["encoding"]["tooltip"])
