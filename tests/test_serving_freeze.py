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
