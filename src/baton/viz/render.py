"""Render a Vega-Lite spec to SVG or PNG, offline, with ``vl-convert-python``.

Rendering never fetches anything: external data URLs are refused (``allowed_base_urls=[]``),
so a spec from an untrusted source cannot make the server call out, and every string is
made XML-safe first (the renderer aborts the process, uncatchably, on control characters). The Vega-Lite version is
pinned to the v5 line our specs are written for. The first call in a process starts the
embedded JavaScript engine (~0.4 s); later calls take tens of milliseconds.
"""

from __future__ import annotations

from typing import Any

from baton.errors import BatonError
from baton.viz.spec import scrub

VEGA_LITE_VERSION = "5.21"


class ChartRenderError(BatonError):
    """A chart spec could not be rendered (malformed spec, a blocked external URL, ...)."""


def _check(spec: Any) -> dict[str, Any]:
    if not isinstance(spec, dict) or not spec:
        raise ChartRenderError("a chart spec must be a non-empty dict (tables have no chart to render)")
    return scrub(spec)  # a spec from elsewhere may carry text that would abort the renderer


def _first_lines(exc: Exception) -> str:
    return " ".join(line.strip() for line in str(exc).splitlines()[:2])


def render_svg(spec: dict[str, Any]) -> str:
    """The chart as an SVG document (a string starting with ``<svg``)."""
    import vl_convert

    try:
        return vl_convert.vegalite_to_svg(_check(spec), vl_version=VEGA_LITE_VERSION, allowed_base_urls=[])
    except ValueError as exc:
        raise ChartRenderError(f"cannot render chart: {_first_lines(exc)}") from exc


def render_png(spec: dict[str, Any], scale: float = 2.0) -> bytes:
    """The chart as PNG bytes; ``scale`` multiplies the pixel size (2 suits retina screens)."""
    import vl_convert

    if not scale > 0:
        raise ChartRenderError(f"scale must be positive, got {scale!r}")
    try:
        return vl_convert.vegalite_to_png(_check(spec), vl_version=VEGA_LITE_VERSION, scale=scale, allowed_base_urls=[])
    except ValueError as exc:
        raise ChartRenderError(f"cannot render chart: {_first_lines(exc)}") from exc
