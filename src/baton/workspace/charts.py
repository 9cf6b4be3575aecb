"""``ChartRenderer``: a workspace's charts as SVG, rendered fairly by the process's renderers.

Rendering runs in worker processes (``baton.viz.render_worker``: a hostile spec costs a
worker, never the server). The workers belong to the process (``RenderService``, one per
process, ``BATON_CHART_WORKERS`` of them, default 2): N workspaces do not start N×2
JavaScript engines. Each workspace's ``ChartRenderer`` is its view of them:

- **a share**: at most ``share`` of its renders run at once (default: half the workers,
  at least one), so one workspace's slow specs never hold every worker: another
  workspace's one-bar chart waits behind at most its share, not its whole queue;
- **a bounded queue**: at most ``queue`` more wait (default 8); beyond that
  ``ChartBusyError`` (HTTP 429 with ``Retry-After``) at once;
- **a cache**: the SVG of a spec already rendered (same spec, by hash) comes from the
  workspace's own LRU cache (``cache_entries``, ``cache_bytes``), not a worker;
- a worker whose render failed in any way is killed and replaced (``render_worker``).

Across workspaces the workers take renders first come, first served. Nothing starts
until the first render; the workers are killed when the process exits.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from baton.errors import BatonError

MAX_CHART_SPEC_BYTES = 5_000_000
DEFAULT_WORKERS = 2
DEFAULT_QUEUE = 8
CACHE_ENTRIES = 64
CACHE_BYTES = 8_000_000


class ChartSpecTooLargeError(BatonError, ValueError):
    """A chart spec over ``MAX_CHART_SPEC_BYTES`` (refused before any rendering)."""


class ChartBusyError(BatonError):
    """This workspace already has as many charts rendering and waiting as it may; retry
    after ``retry_after`` seconds."""

    retry_after = 1


class RenderService:
    """The process's renderer workers, shared fairly by its workspaces."""

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        self.workers = max(1, workers)
        self._executor: ThreadPoolExecutor | None = None
        self._pool: Any = None
        self._lock = threading.Lock()
        self.queued = 0

    def _parts(self) -> tuple[ThreadPoolExecutor, Any]:
        with self._lock:
            if self._executor is None:
                from baton.viz.render_worker import RenderPool

                self._pool = RenderPool(max_idle=self.workers)
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="baton-render")
            return self._executor, self._pool

    async def svg(self, spec: dict[str, Any]) -> str:
        from baton.viz import render_svg

        executor, pool = self._parts()
        self.queued += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, lambda: render_svg(spec, pool=pool))
        finally:
            self.queued -= 1

    def state(self) -> dict[str, Any]:
        return {"state": "ok", "workers": self.workers, "rendering_or_waiting": self.queued}

    def close(self) -> None:
        with self._lock:
            executor, pool, self._executor, self._pool = self._executor, self._pool, None, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if pool is not None:
            pool.close()


_shared: RenderService | None = None
_shared_lock = threading.Lock()


def shared_render_service(workers: int | None = None) -> RenderService:
    """The process's ``RenderService`` (made on first use, with ``workers`` processes, default
    ``BATON_CHART_WORKERS`` of ``Settings.from_env()``; its workers die with the process)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            import atexit

            from baton.settings import Settings

            _shared = RenderService(workers or Settings.from_env().chart_workers)
            atexit.register(_shared.close)
        return _shared


class ChartRenderer:
    def __init__(self, *, slots: int | None = None, max_spec_bytes: int = MAX_CHART_SPEC_BYTES, queue: int = DEFAULT_QUEUE,
                 service: RenderService | None = None, cache_entries: int = CACHE_ENTRIES, cache_bytes: int = CACHE_BYTES) -> None:
        self._service = service
        self.slots = slots  # this workspace's share of the workers (None: half of them, at least one)
        self.queue = queue
        self.max_spec_bytes = max_spec_bytes
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self._cache: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._cached_bytes = 0
        self._semaphore: asyncio.Semaphore | None = None
        self._waiting = 0
        self.hits = 0

    @property
    def service(self) -> RenderService:
        if self._service is None:
            self._service = shared_render_service()
        return self._service

    @property
    def share(self) -> int:
        return self.slots or max(1, self.service.workers // 2)

    async def svg(self, spec: dict[str, Any]) -> str:
        """The spec as SVG; ``ChartSpecTooLargeError``, ``ChartBusyError`` or
        ``baton.viz.ChartRenderError``."""
        text = json.dumps(spec, default=str, sort_keys=True, separators=(",", ":"))
        if len(text) > self.max_spec_bytes:
            raise ChartSpecTooLargeError(f"chart spec over {self.max_spec_bytes} bytes")
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            self.hits += 1
            return cached
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.share)
        if self._semaphore.locked() and self._waiting >= self.queue:
            raise ChartBusyError(f"{self._waiting} charts of this workspace are already waiting")
        self._waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self._waiting -= 1
        try:
            svg = await self.service.svg(spec)
        finally:
            self._semaphore.release()
        self._remember(key, svg)
        return svg

    def _remember(self, key: str, svg: str) -> None:
        if len(svg) > self.cache_bytes:
            return
        self._cache[key] = svg
        self._cached_bytes += len(svg)
        while len(self._cache) > self.cache_entries or self._cached_bytes > self.cache_bytes:
            _, dropped = self._cache.popitem(last=False)
            self._cached_bytes -= len(dropped)

    def close(self) -> None:
        """Forget the cache; a private service (one given to this renderer) is closed too."""
        self._cache.clear()
        self._cached_bytes = 0
        if self._service is not None and self._service is not _shared:
            self._service.close()
