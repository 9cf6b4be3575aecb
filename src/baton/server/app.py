"""The HTTP API (FastAPI): ask, stream, sessions, agents, charts, health, the page, an
OpenAI-compatible chat endpoint, and MCP (Streamable HTTP) at ``/mcp`` (``baton.mcp``).
Every route but ``/health`` and the page's static files needs an API key; the key decides
the workspace.

Routes are adapters: they authenticate, pick the caller's ``Workspace`` and call its
answer path (``Workspace.answer`` / ``answer_stream``), its sessions, its pipelines or its
chart renderer. The app owns the workspaces it is given (``owns_workspaces``): its
lifespan closes them when the server stops.

Under load and faults (README "Limits, timeouts and HTTP errors"): every request passes the
``RequestGuard`` (body size and time, JSON checks, cancellation when the client leaves);
questions pass admission control (``admission.py``); failures map to HTTP statuses in
``errors.py``, their texts made public by ``baton.public_errors``; ``/health`` says the process
is up, ``/health/ready`` what each dependency is doing (``ready.py``). When the server stops,
every open event stream ends with a final event (``shutdown.py``)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.datastructures import Headers

from baton.events import Event, WorkflowTracker
from baton.memory import MemoryUnavailableError
from baton.public_errors import error_body, public_answer, public_event
from baton.server.admission import Admission
from baton.server.analyst_routes import register_analyst_routes
from baton.server.auth import ApiKeys, Caller, Principal, check_key_workspaces
from baton.server.errors import answer_headers, answer_status, register_error_handlers, respond
from baton.server.guard import RequestGuard
from baton.server.lean_route import lean_route
from baton.server.limits import Limits
from baton.server.login_routes import register_login_routes
from baton.server.memory_routes import register_memory_routes
from baton.server.openai_compat import register_openai_routes
from baton.server.page_assets import PAGE_HEADERS, register_asset_routes
from baton.server.pipeline_routes import register_pipeline_routes
from baton.server.ready import register_health_routes
from baton.server.schemas import AskRequest, ChartRequest, turn_key
from baton.server.shutdown import Shutdown, stopping_event, until_shutdown
from baton.server.sse import sse, sse_error
from baton.state import SessionNotFound
from baton.state.bulkheads import Bulkhead
from baton.workspace import ChartSpecTooLargeError, Workspace, Workspaces
from baton.workspace.answer import stored_json

log = logging.getLogger(__name__)
MEMORY_UNAVAILABLE = error_body("the workspace's memory is unavailable; try again")
SESSION_NOT_FOUND = error_body("session not found")


def create_app(workspaces: Workspaces, keys: ApiKeys, *, title: str = "Baton", tracker: WorkflowTracker | None = None,
               owns_workspaces: bool = True, limits: Limits | None = None, login_tokens: Any = None) -> FastAPI:
    """The app. ``login_tokens`` (``baton.state.login_tokens.LoginTokens``) keeps the page's
    login sessions; default: beside the keys' store (``login_routes.tokens_for``).
    ``tracker`` receives every event of every request, next to each workspace's
    own tracker (default: what ``configure_observability`` picks from the environment:
    OpenTelemetry spans when an exporter is configured, structured JSON logs otherwise)."""
    check_key_workspaces(set(keys.workspaces()), set(workspaces.names()))  # StartupRefusal: one line at the CLI
    owned = tracker is None
    if tracker is None:
        from baton.observability import configure_observability

        tracker = configure_observability()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        for ws in app.state.workspaces:
            await ws.start()  # durable pipelines: this process's worker, on this loop
        yield
        app.state.shutdown.begin()  # open streams end with a final event (shutdown.py), if the signal did not already say
        await app.state.mcp.aclose()  # MCP sessions end (their questions cancelled) before anything closes
        app.state.key_lookups.close()
        app.state.admission.close()
        if owns_workspaces:
            await app.state.workspaces.aclose()
            app.state.keys.close()
            app.state.login_tokens.close()
        shutdown = getattr(app.state.tracker, "shutdown", None)
        if owned and callable(shutdown):
            shutdown()  # flush spans still buffered

    app = FastAPI(
        lifespan=lifespan, title=title, version="0.1.0", description="Ask questions of your data through cooperating AI agents.",
        openapi_url=None, docs_url=None, redoc_url=None,  # served below, behind the key
    )
    app.state.workspaces = workspaces
    app.state.keys = keys
    app.state.tracker = tracker
    app.state.shutdown = Shutdown()  # set when the server stops: every open stream ends with a final event
    limits = limits or Limits.from_env()
    app.state.limits = limits
    app.state.admission = Admission(limits)
    for ws in workspaces:  # a bulkhead's full queue is saturation too (admission.py)
        for bulkhead in ws.bulkheads:
            app.state.admission.watch(bulkhead.name, bulkhead.load)
    app.state.key_lookups = Bulkhead("keys", threads=4, queue=256, timeout_s=5.0)  # keys kept in the state store
    app.add_middleware(RequestGuard, limits=limits, admission=app.state.admission)
    register_error_handlers(app)

    def workspace_of(caller: Principal) -> Workspace:
        return app.state.workspaces.for_principal(caller)

    @app.exception_handler(MemoryUnavailableError)
    async def _memory_unavailable(request: Request, exc: MemoryUnavailableError) -> JSONResponse:
        return respond(503, MEMORY_UNAVAILABLE)

    @app.exception_handler(SessionNotFound)
    async def _session_not_found(request: Request, exc: SessionNotFound) -> JSONResponse:
        return respond(404, SESSION_NOT_FOUND)

    register_health_routes(app)

    def charts_state() -> dict[str, Any]:
        from baton.workspace.charts import shared_render_service

        return shared_render_service().state()

    app.state.charts_state = charts_state

    @app.get("/v1/agents", tags=["agents"])
    async def agents(caller: Caller) -> dict[str, Any]:
        ws = workspace_of(caller)
        return {
            "workspace": ws.name,
            "orchestrator": ws.orchestrator.name,
            "agents": [{"name": s.name, "tool": s.tool, "description": s.description} for s in ws.catalog.specialists()],
        }

    async def answer_ask(body: AskRequest, caller: Principal, headers: Headers) -> Response:
        ws = workspace_of(caller)
        key = turn_key(headers, body.turn_id)
        async with app.state.admission.slot():
            message = public_answer(await ws.answer(body.question, body.session_id, tracker=app.state.tracker, turn_key=key))
        return Response(stored_json(message), status_code=answer_status(message), headers=answer_headers(message),
                        media_type="application/json")

    @app.post("/v1/ask", tags=["ask"])
    async def ask(body: AskRequest, caller: Caller, request: Request) -> Response:
        """Answer a question; the body of the response is the AIMessage as JSON: 200 when
        answered (also partly, or with an answer-level error), 502/503/504 when a dependency
        failed and nothing was answered (``errors.py``). Idempotent by key (``baton.state.turn_keys``)."""
        return await answer_ask(body, caller, request.headers)

    lean_route(app, "POST", "/v1/ask", AskRequest, answer_ask)  # a valid body skips FastAPI's machinery (lean_route.py)

    @app.post("/v1/ask/stream", tags=["ask"])
    async def ask_stream(body: AskRequest, caller: Caller, request: Request) -> StreamingResponse:
        """Server-Sent Events: every tracker event as it happens, then ``event: answer``
        (whose ``error_code`` says when the question failed); ``event: error`` when the
        stream itself broke."""
        ws = workspace_of(caller)
        key = turn_key(request.headers, body.turn_id)
        if body.session_id is not None and not await ws.sessions.exists(ws.name, body.session_id):
            raise SessionNotFound(body.session_id)  # 404 before the stream starts
        slot = await app.state.admission.hold()  # 503 before the stream starts when the server is full

        async def events():
            try:
                async for item in ws.answer_stream(body.question, body.session_id, tracker=app.state.tracker, turn_key=key):
                    if isinstance(item, Event):
                        yield sse(item.type, public_event(item.to_dict()))
                    else:
                        yield sse("answer", public_answer(item).to_dict())
            except Exception as exc:  # the stream has started: report in-band
                yield sse_error(exc)

        return slot.streaming(until_shutdown(events(), app.state.shutdown, stopping_event), media_type="text/event-stream",
                              headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.get("/v1/sessions", tags=["sessions"])
    async def sessions(caller: Caller) -> dict[str, Any]:
        ws = workspace_of(caller)
        return {"sessions": [dataclasses.asdict(s) for s in await ws.sessions.list(ws.name)]}

    @app.get("/v1/sessions/{session_id}", tags=["sessions"])
    async def session(session_id: str, caller: Caller) -> dict[str, Any]:
        ws = workspace_of(caller)
        turns = await ws.sessions.turns(ws.name, session_id)
        return {"session_id": session_id, "turns": [{"seq": t.seq, "question": t.question, "answer": public_answer(t.answer).to_dict()} for t in turns]}

    @app.post("/v1/charts/render", tags=["charts"], response_class=Response)
    async def render_chart(body: ChartRequest, caller: Caller) -> Response:
        """Render an answer's Vega-Lite spec to SVG on the server (the page has no CDN), with
        the workspace's share of the process's renderers (``baton.workspace.charts``): 429
        with ``Retry-After`` when its queue is full, 413 over the size limit, 422 when the
        spec cannot be rendered."""
        from baton.viz import ChartRenderError
        from baton.workspace.charts import ChartBusyError

        try:
            svg = await workspace_of(caller).charts.svg(body.spec)
        except ChartSpecTooLargeError as exc:
            raise HTTPException(status_code=413, detail=str(exc)) from exc
        except ChartBusyError as exc:
            raise HTTPException(status_code=429, detail="this workspace's charts are all busy; try again shortly",
                                headers={"Retry-After": str(exc.retry_after)}) from None
        except ChartRenderError as exc:
            raise HTTPException(status_code=422, detail=f"chart spec could not be rendered: {str(exc)[:300]}") from exc
        return Response(svg, media_type="image/svg+xml")

    register_login_routes(app, login_tokens)  # the page's login session: a token in the cookie, never the key

    @app.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(_static("index.html"), headers=PAGE_HEADERS)

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        types = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}
        suffix = name.rsplit(".", 1)[-1]
        if not _STATIC_NAME.fullmatch(name) or suffix not in types:
            raise HTTPException(status_code=404)
        try:
            return Response(_static(name), media_type=types[suffix])
        except FileNotFoundError:
            raise HTTPException(status_code=404) from None

    register_openai_routes(app, workspace_of)
    register_pipeline_routes(app, workspace_of)
    register_memory_routes(app, workspace_of)
    register_analyst_routes(app, workspace_of)  # examples, schema, edited SQL, verified questions, CSV
    register_asset_routes(app)  # the vendored chart runtime, the favicon
    from baton.mcp import mcp_http_router  # MCP (Streamable HTTP) at /mcp: the key picks the workspace, as everywhere

    app.state.mcp = mcp_http_router(workspaces, keys)
    app.router.add_route("/mcp", app.state.mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(caller: Caller) -> dict[str, Any]:
        return app.openapi()

    return app


_STATIC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")


def _static(name: str) -> str:
    return (resources.files("baton.server") / "static" / name).read_text(encoding="utf-8")

