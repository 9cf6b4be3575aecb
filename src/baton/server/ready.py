"""``/health`` (the process is up) and ``/health/ready`` (what each dependency is doing).

``/health/ready`` probes each workspace's stores through their own bulkheads (``SELECT 1``
on the conversation store and on memory, at most every ``PROBE_EVERY_S`` seconds, each
within ``PROBE_TIMEOUT_S``, even while a breaker is open: a store that answers again closes
its breaker, so readiness is back within seconds of the store) and adds what the bulkheads
saw of real traffic (recent failures, open breakers, dropped advisory writes). Each dependency is ``ok``, ``degraded``
(slow, recent failures, a full queue) or ``down``:

- ``sessions``: conversations. Down -> the reply is 503 ``not_ready``: no question can be
  recorded, so a load balancer should send questions elsewhere.
- ``memory`` (reads) and ``insights`` (advisory writes): down -> 200 ``degraded``: questions
  are still answered (verified answers need no memory), memory-backed routes are 503.
- ``knowledge``: document indexes.
- ``charts``: the chart renderer (queue and workers), ``admission``: questions in flight.

No key is needed (load balancers call it) and no workspace is named: each dependency says
its worst state and how many workspaces are in each state.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse

from baton.observability.metrics import CONTENT_TYPE, memory_write_counts, render
from baton.server.auth import authenticate
from baton.state.bulkheads import DependencyUnavailable

PROBE_EVERY_S = 2.0
PROBE_TIMEOUT_S = 1.0
_ORDER = {"ok": 0, "degraded": 1, "down": 2}


def _ping(engine: Any) -> None:
    with engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1")


class Readiness:
    def __init__(self) -> None:
        self._checked = 0.0
        self._last: dict[str, Any] | None = None
        self._lock = asyncio.Lock()

    async def report(self, app: FastAPI) -> dict[str, Any]:
        async with self._lock:
            if self._last is None or time.monotonic() - self._checked > PROBE_EVERY_S:
                self._last = await self._probe(app)
                self._checked = time.monotonic()
            return self._last

    async def _probe(self, app: FastAPI) -> dict[str, Any]:
        kinds: dict[str, list[str]] = {"sessions": [], "memory": [], "insights": [], "knowledge": []}
        for ws in app.state.workspaces:
            probes = [self._one(ws.sessions.bulkhead, getattr(ws.sessions, "engine", None))]
            probes.append(self._one(ws.bulkheads.memory, getattr(ws.memory, "engine", None)) if ws.memory is not None
                          else _done("ok"))
            sessions, memory = await asyncio.gather(*probes)
            kinds["sessions"].append(sessions)
            kinds["memory"].append(memory)
            kinds["insights"].append(ws.bulkheads.insights.state()["state"])
            kinds["knowledge"].append(ws.bulkheads.knowledge.state()["state"])
        dependencies: dict[str, Any] = {}
        for kind, states in kinds.items():
            worst = max(states, key=_ORDER.__getitem__, default="ok")
            counts: dict[str, int] = {}
            for state in states:
                counts[state] = counts.get(state, 0) + 1
            dependencies[kind] = {"state": worst, "workspaces": counts}
        charts = getattr(app.state, "charts_state", None)
        if callable(charts):
            dependencies["charts"] = charts()
        dependencies["insights"]["writes"] = memory_write_counts(app.state.workspaces)  # offered, stored, shed, failed
        dependencies["admission"] = {"state": "ok", **app.state.admission.state()}
        if dependencies["sessions"]["state"] == "down":
            status = "not_ready"
        elif any(d.get("state") != "ok" for d in dependencies.values()):
            status = "degraded"
        else:
            status = "ready"
        return {"status": status, "dependencies": dependencies}

    @staticmethod
    async def _one(bulkhead: Any, engine: Any) -> str:
        if engine is not None:
            try:  # even while the breaker is open: the store answering closes it (recovery in seconds)
                await bulkhead.probe(_ping, engine, timeout=PROBE_TIMEOUT_S)
            except DependencyUnavailable:
                return "down"  # not reachable now, whatever earlier calls saw
        return bulkhead.state()["state"]


async def _done(value: str) -> str:
    return value


def register_health_routes(app: FastAPI) -> None:
    readiness = Readiness()

    @app.get("/health", tags=["meta"])
    async def health() -> dict[str, str]:
        """The process is up (liveness)."""
        return {"status": "ok"}

    @app.get("/health/ready", tags=["meta"])
    async def ready() -> JSONResponse:
        """Each dependency's state; 503 when no question could be recorded (module docstring)."""
        report = await readiness.report(app)
        return JSONResponse(report, status_code=503 if report["status"] == "not_ready" else 200)

    @app.get("/metrics", tags=["meta"], dependencies=[Depends(authenticate)])
    async def metrics() -> PlainTextResponse:
        """Counters in Prometheus' text format (``baton.observability.metrics``): any API key, no workspace named."""
        return PlainTextResponse(render(app.state.workspaces), media_type=CONTENT_TYPE)
