"""A hostile chart spec costs one worker process, never the caller's: a renderer abort
(V8 out of heap, a Rust panic) or a render that runs on is a ChartRenderError."""

from __future__ import annotations

import pytest

from baton.viz import ChartRenderError, render_png, render_svg
from baton.viz.render_worker import RenderFailed, render_isolated

SMALL = {
    "data": {"values": [{"k": "a", "v": 1}, {"k": "b", "v": 3}]},
    "mark": "bar",
    "encoding": {"x": {"field": "k", "type": "nominal"}, "y": {"field": "v", "type": "quantitative"}},
}


@pytest.mark.timeout(60)
def test_a_render_that_runs_on_is_stopped_and_the_next_one_works():
    huge_canvas = {**SMALL, "width": 1e7, "height": 1e7}  # minutes of work for the renderer
    with pytest.raises(ChartRenderError, match="longer than 3 s"):
        render_svg(huge_canvas, timeout=3)
    assert render_svg(SMALL).startswith("<svg")


@pytest.mark.timeout(60)
def test_a_renderer_abort_kills_only_the_worker():
    # unscrubbed control characters make the SVG writer abort the process it runs in
    aborting = {**SMALL, "title": "bad \x01 title"}
    with pytest.raises(RenderFailed, match="renderer process died"):
        render_isolated("svg", aborting, {"vl_version": "5.21", "allowed_base_urls": []}, 30)
    assert render_svg(aborting).startswith("<svg")  # the public path scrubs it first
    assert render_png(SMALL).startswith(b"\x89PNG")


def test_specs_that_are_not_json_are_typed_errors():
    with pytest.raises(ChartRenderError, match="not JSON"):
        render_svg({**SMALL, "width": float("nan")})
    with pytest.raises(ChartRenderError, match="not JSON"):
        render_svg({**SMALL, "usermeta": {"x": object()}})
    with pytest.raises(ChartRenderError, match="timeout"):
        render_svg(SMALL, timeout=0)


def test_renderer_errors_still_come_back_as_messages():
    with pytest.raises(ChartRenderError, match="cannot render chart"):
        render_svg({"data": {"url": "https://example.com/data.csv"}, "mark": "point"})
