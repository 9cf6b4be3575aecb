"""``ChartRenderer``: a workspace's charts as SVG, a few at a time, in its own processes.

Rendering runs in worker processes (``baton.viz.render_worker``: a hostile spec costs a
worker, never the server), called from a thread so the event loop keeps serving, and at
most ``slots`` at once so a burst of big charts queues instead of starting a process each.
The renderer keeps its own idle workers and kills them on ``close()``: a closed workspace
leaves no process behind. Nothing starts until the first render.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from baton.errors import BatonError

MAX_CHART_SPEC_BYTES = 5_000_000
DEFAULT_SLOTS = 2


class ChartSpecTooLargeError(BatonError, ValueError):
    """A chart spec over ``MAX_CHART_SPEC_BYTES`` (refused before any rendering)."""


class ChartRenderer:
    def __init__(self, *, slots: int = DEFAULT_SLOTS, max_spec_bytes: int = MAX_CHART_SPEC_BYTES) -> None:
        self.slots = slots
        self.max_spec_bytes = max_spec_bytes
        self._semaphore: asyncio.Semaphore | None = None
        self._pool: Any = None

    def _pool_of(self):
        if self._pool is None:
            from baton.viz.render_worker import RenderPool

            self._pool = RenderPool(max_idle=self.slots)
        return self._pool

    async def svg(self, spec: dict[str, Any]) -> str:
        """The spec as SVG; ``ChartSpecTooLargeError`` or ``baton.viz.ChartRenderError``."""
        from baton.viz import render_svg

        if len(json.dumps(spec, default=str)) > self.max_spec_bytes:
            raise ChartSpecTooLargeError(f"chart spec over {self.max_spec_bytes} bytes")
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.slots)
        async with self._semaphore:
            return await asyncio.to_thread(render_svg, spec, pool=self._pool_of())

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
