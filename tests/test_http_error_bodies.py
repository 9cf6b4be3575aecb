"""Every HTTP error body of the server is built in ``server/errors.py`` (issue 30, item 5), or
by ``error_body`` (``baton/public_errors.py``, shared with MCP's HTTP endpoint).

The rule, checked on the source of ``src/baton/server/*.py``, ``src/baton/public_errors.py``
and ``src/baton/mcp/http.py`` (the MCP module that answers HTTP) except ``server/errors.py``
itself, by walking each module's syntax tree:

1. no dict display (``{...}``) and no ``dict(...)`` call with a ``"detail"``, ``"error"`` or
   ``"error_code"`` key: an error body, an OpenAI error object or a stream's error event is
   made by ``error_body``, ``openai_error_body``, ``stream_error`` or ``overloaded_body``;
2. no response (``JSONResponse``, ``Response``, ``PlainTextResponse``, ...) built with a
   ``status_code`` holding a literal 4xx or 5xx: an error reply is ``error_response``,
   ``respond`` (a body built once) or ``openai_error``; a raised ``HTTPException`` is fine,
   its body is made by ``errors.py``'s handler (tested below to match FastAPI's own).

Allowed, each for its reason (``ALLOWED``): ``public_errors.error_body`` is the builder
itself; ``public_errors.public_failure`` rewrites a
failed agent's entry inside an answer (its text made public), not an error body;
``ready.register_health_routes`` sends the readiness report, the same shape at 200 and 503
(a probe's report, not an error). Out of the rule: ``connections.TIMED_OUT``, the raw
plain-text 408 written on a socket whose request headers never arrived (no request exists).
"""

from __future__ import annotations

import ast
from pathlib import Path

import httpx
from fastapi import FastAPI, HTTPException

from baton.public_errors import error_body
from baton.server.admission import OVERLOADED
from baton.server.errors import (
    error_response,
    openai_error,
    openai_error_body,
    overloaded_body,
    register_error_handlers,
    respond,
    stream_error,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "baton"
MODULES = sorted(p for p in (SRC / "server").glob("*.py") if p.name != "errors.py") + [SRC / "public_errors.py", SRC / "mcp" / "http.py"]
ERROR_KEYS = {"detail", "error", "error_code"}
RESPONSES = {"JSONResponse", "Response", "PlainTextResponse", "HTMLResponse", "StreamingResponse", "ORJSONResponse"}
ALLOWED = {("public_errors.py", "error_body"), ("public_errors.py", "public_failure"), ("ready.py", "register_health_routes")}


def _error_status(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and type(n.value) is int and 400 <= n.value < 600 for n in ast.walk(node))


def _callee(node: ast.Call) -> str | None:
    return node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else None


def hand_built_bodies(source: str, name: str) -> list[str]:
    """Each place in ``source`` that builds an error body or reply by hand (module docstring)."""
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and function is None:
            function = node.name  # the top-level function (routes are nested in their register_*)
        if (name, function) not in ALLOWED:
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value in ERROR_KEYS for k in node.keys):
                found.append(f"{name}:{node.lineno} {{...}} with an error key")
            if isinstance(node, ast.Call):
                callee = _callee(node)
                if callee == "dict" and any(kw.arg in ERROR_KEYS for kw in node.keywords):
                    found.append(f"{name}:{node.lineno} dict(...) with an error key")
                if callee in RESPONSES and any(kw.arg == "status_code" and _error_status(kw.value) for kw in node.keywords):
                    found.append(f"{name}:{node.lineno} {callee}(status_code=4xx/5xx)")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(source, name), None)
    return found


def test_no_error_body_is_built_outside_errors_py():
    found = [hit for path in MODULES for hit in hand_built_bodies(path.read_text(), path.name)]
    assert found == []


def test_the_rule_finds_each_kind_of_hand_built_body():
    source = '''
def routes(app):
    async def one():
        return JSONResponse({"detail": "gone"}, status_code=404)
    async def two():
        return JSONResponse(body, status_code=503 if busy else 200)
    def three():
        yield sse_data({"error": {"message": "x"}})
    def four():
        return dict(detail="x", error_code="y")
    async def fine():
        return JSONResponse({"accepted": True}, status_code=202)
'''
    assert hand_built_bodies(source, "m.py") == [
        "m.py:4 JSONResponse(status_code=4xx/5xx)", "m.py:4 {...} with an error key", "m.py:6 JSONResponse(status_code=4xx/5xx)",
        "m.py:8 {...} with an error key", "m.py:10 dict(...) with an error key"]
    assert hand_built_bodies(source, "m.py") == hand_built_bodies(source.replace("routes", "public_failure"), "m.py")
    assert hand_built_bodies(source.replace("routes", "public_failure"), "public_errors.py") == []


def test_baton_error_body_shapes():
    assert error_body("session not found") == {"detail": "session not found"}
    assert error_body("answer not found", "not_found") == {"detail": "answer not found", "error_code": "not_found"}
    body = error_body("unsafe", "unsafe_sql", rule="ddl")
    assert body == {"detail": "unsafe", "error_code": "unsafe_sql", "rule": "ddl"} and list(body) == ["detail", "error_code", "rule"]
    assert error_body([{"loc": ["body"], "msg": "x", "type": "missing"}]) == {"detail": [{"loc": ["body"], "msg": "x", "type": "missing"}]}
    assert stream_error("ServerStopping", "server_stopping", "stopping", turn_id="t") == {
        "error": "ServerStopping", "error_code": "server_stopping", "detail": "stopping", "turn_id": "t"}


def test_openai_error_body_shapes():
    assert openai_error_body("bad", param="model", code="model_not_found") == {
        "error": {"message": "bad", "type": "invalid_request_error", "param": "model", "code": "model_not_found"}}
    streamed = openai_error_body("stopping", type="service_unavailable", code="server_stopping", streamed=True, turn_id="t")
    assert streamed == {"error": {"message": "stopping", "type": "service_unavailable", "code": "server_stopping"}, "turn_id": "t"}
    assert "param" not in streamed["error"]


def test_overloaded_bodies_are_built_once_in_both_shapes():
    assert overloaded_body(False) == {"detail": OVERLOADED, "error_code": "overloaded"}
    assert overloaded_body(True) == {"error": {"message": OVERLOADED, "type": "service_unavailable", "param": None, "code": "overloaded"}}
    assert overloaded_body(True) is overloaded_body(True)


def test_responses_carry_status_headers_and_body():
    response = error_response(503, "down", "state_unavailable", headers={"Retry-After": "5"}, turn_id="t")
    assert (response.status_code, response.headers["retry-after"]) == (503, "5")
    assert response.body == b'{"detail":"down","error_code":"state_unavailable","turn_id":"t"}'
    assert respond(404, error_body("gone")).body == b'{"detail":"gone"}'
    reply = openai_error(404, "no", param="model", code="model_not_found", baton={"a": 1})
    assert reply.body == b'{"error":{"message":"no","type":"invalid_request_error","param":"model","code":"model_not_found"},"baton":{"a":1}}'


def test_constant_bodies_and_stream_frames_keep_their_shapes():
    from baton.server import analyst_routes, app, pipeline_routes
    from baton.server.openai_compat import stopping_chunk
    from baton.server.shutdown import STOPPING_DETAIL, stopping_event

    assert analyst_routes.NOT_FOUND == {"detail": "answer not found", "error_code": "not_found"}
    assert app.SESSION_NOT_FOUND == {"detail": "session not found"}
    assert app.MEMORY_UNAVAILABLE == {"detail": "the workspace's memory is unavailable; try again"}
    assert pipeline_routes.RUN_NOT_FOUND == {"detail": "pipeline run not found"}
    assert stopping_event() == ('event: error\ndata: {"error": "ServerStopping", "error_code": "server_stopping", '
                                f'"detail": "{STOPPING_DETAIL}"}}\n\n')
    assert stopping_chunk() == (f'data: {{"error": {{"message": "{STOPPING_DETAIL}", "type": "service_unavailable", '
                                '"code": "server_stopping"}}\n\ndata: [DONE]\n\n')


def _app(handlers: bool) -> FastAPI:
    app = FastAPI()
    if handlers:
        register_error_handlers(app)

    @app.get("/denied")
    async def denied() -> None:
        raise HTTPException(status_code=401, detail="missing or invalid API key", headers={"WWW-Authenticate": "Bearer"})

    @app.get("/problems")
    async def problems() -> None:
        raise HTTPException(status_code=422, detail=[{"field": "stages", "problem": "empty"}])

    @app.get("/empty")
    async def empty() -> None:
        raise HTTPException(status_code=304)

    return app


async def _replies(app: FastAPI) -> list[tuple[int, bytes, str | None, str | None]]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        out = []
        for method, path in (("GET", "/denied"), ("GET", "/problems"), ("GET", "/empty"), ("GET", "/nowhere"), ("POST", "/denied")):
            reply = await client.request(method, path)
            out.append((reply.status_code, reply.content, reply.headers.get("www-authenticate"), reply.headers.get("allow")))
        return out


async def test_a_raised_http_exception_reads_as_fastapis_own_reply():
    """errors.py's ``HTTPException`` handler: same status, body and headers as FastAPI's,
    for a route's refusal, a list detail, a status without a body, 404 and 405."""
    ours, fastapis = await _replies(_app(True)), await _replies(_app(False))
    assert ours == fastapis
    assert ours[0] == (401, b'{"detail":"missing or invalid API key"}', "Bearer", None)
    assert [status for status, *_ in ours] == [401, 422, 304, 404, 405]
