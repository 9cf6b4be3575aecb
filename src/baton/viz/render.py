"""Render a Vega-Lite spec to SVG or PNG, offline, with ``vl-convert-python``.

Rendering never fetches anything: external data URLs are refused (``allowed_base_urls=[]``),
so a spec from an untrusted source cannot make the server call out, and every string is
made XML-safe first (the renderer aborts the process, uncatchably, on control characters). The Vega-Lite version is
pinned to the v5 line our specs are written for.

Rendering runs in a worker process (``render_worker``): a spec can exhaust the engine's
heap, which aborts the process it runs in, or keep it busy for minutes, and the server
renders specs its callers send. A crash or a render past ``timeout`` seconds costs only that
worker and raises ``ChartRenderError``. The first call starts a worker and its JavaScript
engine (~0.5 s); later calls take tens of milliseconds.
"""

from __future__ import annotations

from typing import Any, Literal, overload

from baton.errors import BatonError
from baton.viz.spec import scrub

VEGA_LITE_VERSION = "5.21"
RENDER_TIMEOUT = 20.0  # seconds; Baton's own charts (<= 5,000 rows) render in well under one


class ChartRenderError(BatonError):
    """A chart spec could not be rendered (malformed spec, a blocked external URL, ...)."""


def _check(spec: Any) -> dict[str, Any]:
    if not isinstance(spec, dict) or not spec:
        raise ChartRenderError("a chart spec must be a non-empty dict (tables have no chart to render)")
    return scrub(spec)  # a spec from elsewhere may carry text that would abort the renderer


@overload
def _render(kind: Literal["svg"], spec: Any, options: dict[str, Any], timeout: float, pool: Any = None) -> str: ...
@overload
def _render(kind: Literal["png"], spec: Any, options: dict[str, Any], timeout: float, pool: Any = None) -> bytes: ...
def _render(kind: Literal["svg", "png"], spec: Any, options: dict[str, Any], timeout: float,
            pool: Any = None) -> str | bytes:
    from baton.viz.render_worker import RenderFailed, render_isolated

    if not timeout > 0:
        raise ChartRenderError(f"timeout must be positive, got {timeout!r}")
    checked = _check(spec)
    try:
        return render_isolated(kind, checked, {"vl_version": VEGA_LITE_VERSION, "allowed_base_urls": [], **options}, timeout, pool)
    except (TypeError, ValueError) as exc:  # not JSON (an object, NaN)
        raise ChartRenderError(f"cannot render chart: the spec is not JSON: {exc}") from exc
    except RenderFailed as exc:
        raise ChartRenderError(f"cannot render chart: {exc}") from exc


def render_svg(spec: dict[str, Any], *, timeout: float = RENDER_TIMEOUT, pool: Any = None) -> str:
    """The chart as an SVG document (a string starting with ``<svg``). ``pool``: the
    ``render_worker.RenderPool`` whose workers render it (default: the process's own)."""
    return _render("svg", spec, {}, timeout, pool)


def render_png(spec: dict[str, Any], scale: float = 2.0, *, timeout: float = RENDER_TIMEOUT, pool: Any = None) -> bytes:
    """The chart as PNG bytes; ``scale`` multiplies the pixel size (2 suits retina screens)."""
    if not scale > 0:
        raise ChartRenderError(f"scale must be positive, got {scale!r}")
    return _render("png", spec, {"scale": scale}, timeout, pool)
