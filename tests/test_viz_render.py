"""Offline rendering to SVG and PNG, its typed errors, and the notebook view of an answer."""

from __future__ import annotations

import struct
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
