"""Pipelines over HTTP: start a run, list runs, read one, stream its events, answer its
checkpoint. Any replica serves any run of the caller's workspace (runs execute on workers;
their events reach this replica through the event bus); a run of another workspace is a
404, the same as one that does not exist.

- ``POST /v1/pipelines`` ``{"question"}`` (planned by the workspace's planner) or ``{"plan"}``
  (an ``ExecutionPlan`` as JSON): 202 with the run's id, without waiting for it.
- ``GET /v1/pipelines``: the workspace's latest runs; ``GET /v1/pipelines/{id}``: one run
  with its latest outcome.
- ``GET /v1/pipelines/{id}/events``: Server-Sent Events, what happened so far then live,
  until the run ends; ``event: end`` last. Each of the run's events has ``id:`` its sequence
  number (``data.seq``; ``data.attempt`` counts takeovers' replays); a client that
  reconnects with ``Last-Event-ID`` (or ``?after=``) gets the events after it, in order, from
  any replica. ``llm.token`` events have no ``id`` and are not replayed. When the server stops first, the stream ends with
  ``event: error`` (``error_code: server_stopping``): the run goes on, reconnect to follow it.
- ``POST /v1/pipelines/{id}/decision``: approve, edit or reject the checkpoint the run waits
  at. By default the reply is the run's next outcome (its next checkpoint or its end);
  ``"wait": false`` returns 202 at once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, StreamingResponse

from baton.public_errors import error_body, public_answer, public_event, public_run
from baton.server.auth import Caller
from baton.server.errors import respond
from baton.server.schemas import CheckpointDecision as CheckpointDecisionBody
from baton.server.schemas import StartPipelineRequest
from baton.server.shutdown import stopping_event, until_shutdown
from baton.server.slots import streaming_response
from baton.server.sse import sse, sse_error
from baton.state import SessionNotFound
from baton.workspace.pipelines import PipelineNotFound

log = logging.getLogger(__name__)
NO_RUN = "no paused pipeline with this id"
RUN_NOT_FOUND = error_body("pipeline run not found")
RESUME_ID = re.compile(r"[0-9]{1,18}")
MAX_SEQ = 10**18


def register_pipeline_routes(app: FastAPI, workspace_of: Callable) -> None:
    def service_of(caller):
        ws = workspace_of(caller)
        if ws.pipelines is None:
            raise HTTPException(status_code=404, detail="this workspace runs no pipelines (it needs a model)")
        return ws

    @app.exception_handler(PipelineNotFound)
    async def _not_found(request: Request, exc: PipelineNotFound) -> JSONResponse:
        return respond(404, RUN_NOT_FOUND)

    @app.post("/v1/pipelines", tags=["pipelines"], status_code=202)
    async def start(body: StartPipelineRequest, caller: Caller, request: Request) -> dict[str, Any]:
        """Start a multi-stage run; follow it at ``/v1/pipelines/{id}/events``."""
        from baton.agents import AgentContext
        from baton.pipeline import ExecutionPlan, PlanDefect, PlanValidationError

        ws = service_of(caller)
        if body.session_id is not None and not await ws.sessions.exists(ws.name, body.session_id):
            raise SessionNotFound(body.session_id)
        context = AgentContext(user_question=body.question or "", workspace=ws.name,
                               tracker=ws.request_tracker(request.app.state.tracker) or AgentContext().tracker)
        try:
            plan = ExecutionPlan.from_dict(body.plan) if body.plan is not None else None  # checked as it is read
            wid = await ws.pipelines.start_run(context, plan=plan, question=body.question, session_id=body.session_id)
        except (PlanValidationError, PlanDefect) as exc:
            raise HTTPException(status_code=422, detail=getattr(exc, "problems", None) or str(exc)) from exc
        return {"workflow_id": wid, "status": "enqueued"}

    @app.get("/v1/pipelines", tags=["pipelines"])
    async def runs(caller: Caller, limit: int = 50) -> dict[str, Any]:
        ws = service_of(caller)
        return {"runs": await ws.pipelines.runs(min(max(limit, 1), 500))}

    @app.get("/v1/pipelines/{workflow_id}", tags=["pipelines"])
    async def run(workflow_id: str, caller: Caller) -> dict[str, Any]:
        return public_run(await service_of(caller).pipelines.status(workflow_id))

    @app.get("/v1/pipelines/{workflow_id}/events", tags=["pipelines"])
    async def events(workflow_id: str, caller: Caller, request: Request, after: int | None = None) -> StreamingResponse:
        """The run's events in order; resume after ``Last-Event-ID`` (or ``after``)."""
        ws = service_of(caller)
        await ws.pipelines.status(workflow_id)  # 404 before the stream starts
        start = _resume_point(request.headers.get("last-event-id"), after)

        async def stream():
            try:
                async for event in ws.pipelines.events(workflow_id, after=start):
                    wire = public_event(event.to_dict())
                    yield sse(event.type, wire, event_id=(wire.get("data") or {}).get("seq"))
                yield sse("end", {"workflow_id": workflow_id})
            except Exception as exc:  # the stream has started: report in-band, typed, no internal text
                yield sse_error(exc)

        # the server stopping ends the stream with a final event; the run goes on (reconnect to any replica)
        return streaming_response(until_shutdown(stream(), getattr(request.app.state, "shutdown", None), stopping_event),
                                  media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    def _resume_point(header: str | None, after: int | None) -> int:
        """Where a resumed stream starts: ASCII digits only (``int`` would take '+1', ' 1'
        or other scripts' digits), at most a 64-bit column's numbers."""
        if header is not None and header.strip():
            if not RESUME_ID.fullmatch(header.strip()):
                raise HTTPException(status_code=400, detail="Last-Event-ID must be an event's sequence number")
            return int(header.strip())
        return min(max(after or 0, 0), MAX_SEQ)

    @app.post("/v1/pipelines/{workflow_id}/decision", tags=["pipelines"])
    async def decision(workflow_id: str, body: CheckpointDecisionBody, caller: Caller, request: Request):
        """Approve, edit (the next stage's question) or reject a paused pipeline."""
        from baton.pipeline import CheckpointDecision, CheckpointDecisionError

        ws = workspace_of(caller)
        try:
            decided = CheckpointDecision(body.action, question=body.question, stage_id=body.stage_id, target_stage=body.target_stage)
            message = await ws.decide(workflow_id, decided, session_id=body.session_id, tracker=request.app.state.tracker, wait=body.wait)
        except PipelineNotFound:
            raise HTTPException(status_code=404, detail=NO_RUN) from None
        except CheckpointDecisionError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        if message is None:
            return JSONResponse({"workflow_id": workflow_id, "accepted": True}, status_code=202)
        return public_answer(message).to_dict()
