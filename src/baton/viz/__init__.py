"""Charts for query results: choose a type from the data's shape, build a Vega-Lite v5 spec
with the data inlined, validate a requested type, and render SVG/PNG offline; and the
follow-ups a data answer offers (``suggest``), which read the same profile of the result
(one package, so charts and suggestions never import each other across packages).

Depends only on the protocol layer (``baton.response``), so any specialist may use it.
"""

from baton.viz.choose import (
    MAX_PIE_SLICES,
    VIZ_TYPES,
    ChartChoice,
    choose_chart,
    requested_type,
    validate_chart,
)
from baton.viz.render import ChartRenderError, render_png, render_svg
from baton.viz.spec import MAX_CHART_ROWS

__all__ = [
    "MAX_CHART_ROWS",
    "MAX_PIE_SLICES",
    "VIZ_TYPES",
    "ChartChoice",
    "ChartRenderError",
    "choose_chart",
    "render_png",
    "render_svg",
    "requested_type",
    "validate_chart",
]
