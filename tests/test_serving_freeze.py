"""The serving process moves the objects alive after startup out of the garbage collector's
way (``frozen_after_startup``); requests pass through the wrapper unchanged."""

from __future__ import annotations

import gc

import httpx

from baton.cli.serving import frozen_after_startup


async def test_the_served_app_is_frozen_once_started_and_serves_as_before(monkeypatch):
    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    events: list[str] = []

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            message = await receive()
            events.append(message["type"])
            await send({"type": "lifespan.startup.complete"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})

    served = frozen_after_startup(app)
    sent: list[dict] = []

    async def receive():
        return {"type": "lifespan.startup"}

    async def send(message):
        sent.append(message)

    await served({"type": "lifespan"}, receive, send)
    assert frozen == [True] and events == ["lifespan.startup"] and sent == [{"type": "lifespan.startup.complete"}]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=served), base_url="http://t") as client:
        response = await client.get("/")
    assert response.status_code == 200 and response.text == "ok" and frozen == [True]


def test_a_worker_logs_at_the_level_its_supervisor_was_given():
    """``serve_factory``'s workers are new processes (spawned): the supervisor's logging set-up
    is not theirs, so each worker sets up its own at the level passed on (admission's
    saturation lines, at info, were lost in every worker)."""
    import os
    import subprocess
    import sys

    code = ("import logging, os; from baton.cli.serving import served_app; served_app(); "
            "print(logging.getLogger().getEffectiveLevel(), logging.getLogger().handlers != [])")
    env = {**os.environ, "BATON_SERVED_FACTORY": "builtins:object", "BATON_SERVED_LOG_LEVEL": "debug"}
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert shown.stdout.split() == ["10", "True"]
    env["BATON_SERVED_LOG_LEVEL"] = "warning"
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert shown.stdout.split() == ["30", "True"]
