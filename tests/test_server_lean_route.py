"""The lean path into ``POST /v1/ask`` (``baton.server.lean_route``): a valid body is answered
without FastAPI's handler; everything else gets FastAPI's own answer, the same as before."""

import httpx
import pytest
from fastapi.routing import APIRoute
from starlette.responses import Response

from baton.server import ApiKeys, Workspaces, create_app
from baton.server.lean_route import LeanJsonRoute
from baton.server.schemas import AskRequest
from test_server_api import ACME, workspace


@pytest.fixture
def app():
    return create_app(Workspaces([workspace("acme", "acme-data"), workspace("globex", "globex-data")]),
                      ApiKeys({"key-acme": "acme", "key-globex": "globex"}))


@pytest.fixture
async def client(app):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        yield c


class Recorder:
    """A fallback (FastAPI's handler in the app) that records the body it was given."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope, receive, send) -> None:
        message = await receive()
        self.bodies.append(message["body"])
        await Response("fallback", status_code=299)(scope, receive, send)


async def _call(route, body: bytes, content_type: bytes = b"application/json", chunks: int = 1, app=None, key: bytes = b""):
    """``route`` called as an ASGI app with ``body`` (in ``chunks`` messages); (status, body)."""
    size = max(1, len(body) // chunks)
    parts = [body[i:i + size] for i in range(0, len(body), size)] or [b""]
    messages = [{"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    headers = [(b"content-type", content_type)] + ([(b"authorization", b"Bearer " + key)] if key else [])
    scope = {"type": "http", "method": "POST", "path": "/v1/ask", "headers": headers, "query_string": b"", "app": app}
    await route(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def test_only_bodies_the_model_accepts_take_the_lean_path():
    handled = []

    async def handle(body, caller, headers):
        handled.append(body.question)
        return Response("lean")

    fallback = Recorder()
    route = LeanJsonRoute(fallback, AskRequest, handle)
    for body, content_type in [(b"{nope", b"application/json"), (b'{"question": ""}', b"application/json"),
                               (b'{"question": "x", "extra": 1}', b"application/json"), (b"", b"application/json"),
                               (b'{"question": "x"}', b"text/plain"), (b'{"question": "x"}', b"application/vnd.x+json")]:
        assert await _call(route, body, content_type) == (299, b"fallback"), (body, content_type)
        assert fallback.bodies[-1] == body  # FastAPI's handler reads the same body
    assert handled == []


async def test_a_valid_body_in_several_messages_is_read_whole(app):
    route = next(r for r in app.router.routes if isinstance(r, APIRoute) and r.path == "/v1/ask")
    assert isinstance(route.app, LeanJsonRoute)  # the app's /v1/ask takes the lean path
    fallback = Recorder()
    seen = []

    async def handle(body, caller, headers):
        seen.append((body.question, body.session_id, caller.workspace, headers["authorization"]))
        return Response("lean")

    lean = LeanJsonRoute(fallback, AskRequest, handle)
    body = b'{"question": "Pokemon revenue?", "session_id": "s1"}'
    assert await _call(lean, body, chunks=4, app=app, key=b"key-acme") == (200, b"lean")
    assert seen == [("Pokemon revenue?", "s1", "acme", "Bearer key-acme")] and fallback.bodies == []


async def test_statuses_and_error_bodies_are_fastapis(client):
    answered = await client.post("/v1/ask", json={"question": "Pokemon revenue?"}, headers=ACME)
    assert answered.status_code == 200 and answered.json()["input"] == "Pokemon revenue?"
    no_key = await client.post("/v1/ask", json={"question": "x"})
    assert no_key.status_code == 401 and no_key.json() == {"detail": "an API key is required"}
    assert no_key.headers["www-authenticate"] == "Bearer"
    wrong_key = await client.post("/v1/ask", json={"question": "x"}, headers={"Authorization": "Bearer nope"})
    assert wrong_key.status_code == 401 and wrong_key.json() == {"detail": "missing or invalid API key"}
    invalid_no_key = await client.post("/v1/ask", json={"question": ""})  # FastAPI checks the key before the fields
    assert invalid_no_key.status_code == 401
    broken_no_key = await client.post("/v1/ask", content=b"{nope", headers={"content-type": "application/json"})
    assert broken_no_key.status_code == 422 and broken_no_key.json()["detail"][0]["type"] == "json_invalid"
    empty = await client.post("/v1/ask", json={"question": ""}, headers=ACME)
    assert empty.status_code == 422 and empty.json()["detail"][0]["loc"] == ["body", "question"]
    other_session = await client.post("/v1/ask", json={"question": "x", "session_id": "nope"}, headers=ACME)
    assert other_session.status_code == 404 and other_session.json() == {"detail": "session not found"}
    bad_key_header = await client.post("/v1/ask", json={"question": "x"}, headers={**ACME, "Idempotency-Key": "a b"})
    assert bad_key_header.status_code == 422
