"""Offline rendering to SVG and PNG, its typed errors, and the notebook view of an answer."""

from __future__ import annotations

import datetime as dt
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from baton.errors import BatonError
from baton.response import AIMessage, QueryResult, ResponseType
from baton.viz import ChartRenderError, choose_chart, render_png, render_svg

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
RESULT = QueryResult(["region", "sales"], [["North", 120], ["South", 80], ["East", 95]])


def png_size(data: bytes) -> tuple[int, int]:
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_svg_parses_as_svg():
    svg = render_svg(choose_chart(RESULT).viz_config)
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"North", "South", "East", "sales by region"} <= texts


def test_png_has_the_signature_and_scale_multiplies_its_size():
    spec = choose_chart(RESULT).viz_config
    one, two = render_png(spec, scale=1), render_png(spec, scale=2)
    assert one.startswith(PNG_SIGNATURE) and two.startswith(PNG_SIGNATURE)
    (w1, h1), (w2, h2) = png_size(one), png_size(two)
    assert (w2, h2) == (2 * w1, 2 * h1)


def test_external_data_urls_are_refused():
    spec = {"data": {"url": "http://example.com/data.json"}, "mark": "bar",
            "encoding": {"x": {"field": "a", "type": "nominal"}}}
    with pytest.raises(ChartRenderError, match="not allowed"):
        render_svg(spec)
    with pytest.raises(ChartRenderError):
        render_png(spec)


@pytest.mark.parametrize("spec", [{}, None, "bar", {"mark": "no-such-mark"}, {"data": {"values": [{"a": object()}]}, "mark": "bar"}])
def test_bad_specs_raise_a_typed_error(spec):
    with pytest.raises(ChartRenderError) as info:
        render_svg(spec)
    assert isinstance(info.value, BatonError)


def test_non_positive_scale_is_rejected():
    with pytest.raises(ChartRenderError, match="scale"):
        render_png(choose_chart(RESULT).viz_config, scale=0)


def test_notebook_html_shows_the_results_table_and_the_chart():
    choice = choose_chart(RESULT)
    message = AIMessage(content="North leads.", results=RESULT, viz_type=choice.viz_type, viz_config=choice.viz_config,
                        query="SELECT region, SUM(sales) FROM t GROUP BY region", response_type=ResponseType.SQL_RESULT)
    html = message._repr_html_()
    assert "<table>" in html and "<td>North</td>" in html
    assert "<svg" in html and "</svg>" in html
    assert "SELECT region" in html


def test_notebook_html_survives_a_chart_that_cannot_render():
    message = AIMessage(content="answer", results=RESULT, viz_config={"mark": "no-such-mark"})
    html = message._repr_html_()
    assert "<td>North</td>" in html and "<svg" not in html


def test_text_xml_cannot_hold_is_scrubbed_instead_of_aborting_the_process():
    # vl-convert aborts the whole interpreter (a Rust panic) on control characters, so this
    # runs in a child process: a regression fails this test instead of killing the run.
    code = (
        "import xml.etree.ElementTree as ET\n"
        "from baton.response import QueryResult\n"
        "from baton.viz import choose_chart, render_svg\n"
        "r = QueryResult(['na\\x01me', 'v'], [['a\\x06b', 1], ['\\ud800x', 2], ['ok\\x00', 3]])\n"
        "spec = choose_chart(r, question='why\\x1b?').viz_config\n"
        "assert '\\x06' not in repr(spec) and '\\ufffd' in spec['data']['values'][0]['na\\ufffdme']\n"
        "ET.fromstring(render_svg(spec))\n"
        "raw = {'mark': 'bar', 'title': 't\\x00', 'data': {'values': [{'k\\x02': 'x\\x03', 'v': 1}]},\n"
        "       'encoding': {'x': {'field': 'k\\x02', 'type': 'nominal'}, 'y': {'field': 'v', 'type': 'quantitative'}}}\n"
        "ET.fromstring(render_svg(raw))\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_long_time_spans_do_not_ask_for_a_tick_per_day():
    # a tick per day over 40 years takes the renderer half a minute
    long = QueryResult(["day", "n"], [[dt.date(1990, 1, 1), 1], [dt.date(2010, 5, 3), 3], [dt.date(2030, 1, 2), 2]])
    short = QueryResult(["day", "n"], [[dt.date(2024, 1, d), d] for d in (1, 2, 5, 9)])
    assert "tickCount" not in choose_chart(long).viz_config["encoding"]["x"]["axis"]
    assert choose_chart(short).viz_config["encoding"]["x"]["axis"]["tickCount"] == {"interval": "day", "step": 1}
    texts = [t for t in ET.fromstring(render_svg(choose_chart(short).viz_config)).itertext()]
    assert texts.count("Jan 01, 2024") == 1  # one label per day, not one per hour
