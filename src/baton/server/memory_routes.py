"""Feedback, insights and memory endpoints. Each resolves the caller's workspace from the
key and opens that workspace's memory scope; ids from another workspace are simply not
found (404, the same as ids that don't exist).

Memory calls run on the workspace's memory bulkhead (``baton.state.bulkheads``): when
memory is slow or down the reply is a 503 JSON body with ``Retry-After`` within seconds
(``DependencyUnavailable``, handled in ``app.py``), never a hung request or a 500. A read
first lets the workspace's advisory writes already queued land (at most ``READ_WAIT_S``),
so a person reads what their last answer wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException

from baton.server.auth import Caller
from baton.server.schemas import DismissInsightRequest, FeedbackRequest
from baton.state import SessionNotFound
from baton.workspace.advisory import read_memory

NOT_FOUND = "not found"
READ_WAIT_S = 1.0


async def _settled(ws) -> None:
    await ws.bulkheads.insights.drain(READ_WAIT_S)


def _memory(ws):
    if ws.memory is None:
        raise HTTPException(status_code=404, detail="this workspace has no memory configured")
    return ws.memory, ws.memory_scope()


def _record_view(record) -> dict[str, Any]:
    return {
        "id": record.id, "kind": record.kind, "text": record.text, "entity": record.entity, "attribute": record.attribute,
        "scope": record.scope, "value": record.value, "category": record.category, "connection_id": record.connection_id,
        "confidence": round(record.confidence, 4), "status": record.status, "stale": record.stale,
        "superseded_by": record.superseded_by, "times_applied": record.times_applied,
    }


def register_memory_routes(app: FastAPI, workspace_of: Callable) -> None:
    @app.post("/v1/feedback", tags=["memory"])
    async def feedback(body: FeedbackRequest, caller: Caller) -> dict[str, Any]:
        """Thumbs and data verdicts on one answer (a turn); see ``baton.workspace.feedback``."""
        from baton.memory import InvalidRecordError

        ws = workspace_of(caller)
        try:
            return await ws.feedback(body.turn_id, thumbs=body.thumbs, verdict=body.verdict, comment=body.comment)
        except SessionNotFound:
            raise HTTPException(status_code=404, detail="answer not found") from None
        except InvalidRecordError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc

    @app.post("/v1/insights/dismiss", tags=["memory"])
    async def dismiss(body: DismissInsightRequest, caller: Caller) -> dict[str, Any]:
        from baton.memory.bridge import dismiss_insight

        ws = workspace_of(caller)
        store, scope = _memory(ws)
        await _settled(ws)
        if not await read_memory(ws, dismiss_insight, store, scope, body.insight_id):
            raise HTTPException(status_code=404, detail="insight not found")
        return {"dismissed": body.insight_id}

    @app.get("/v1/memory", tags=["memory"])
    async def memory_list(caller: Caller, kind: str | None = None, limit: int = 100) -> dict[str, Any]:
        ws = workspace_of(caller)
        store, scope = _memory(ws)
        await _settled(ws)
        records = await read_memory(ws, store.list_records, scope, kind=kind, limit=min(max(limit, 1), 1000))
        return {"records": [_record_view(r) for r in records]}

    @app.get("/v1/memory/{record_id}", tags=["memory"])
    async def memory_show(record_id: str, caller: Caller) -> dict[str, Any]:
        from baton.memory import RecordNotFoundError

        ws = workspace_of(caller)
        store, scope = _memory(ws)
        await _settled(ws)
        try:
            record = await read_memory(ws, store.get, scope, record_id)
            history = await read_memory(ws, store.history, scope, record_id)
        except RecordNotFoundError:
            raise HTTPException(status_code=404, detail=NOT_FOUND) from None
        return {"record": _record_view(record),
                "history": [{"seq": e.seq, "type": e.type, "at": e.recorded_at, "erased": e.payload is None} for e in history]}

    @app.delete("/v1/memory/{record_id}", tags=["memory"])
    async def memory_forget(record_id: str, caller: Caller) -> dict[str, Any]:
        """Erase a record: a tombstone in the journal, its text gone from every projection."""
        from baton.memory import RecordNotFoundError

        ws = workspace_of(caller)
        store, scope = _memory(ws)
        await _settled(ws)
        try:
            erased = await read_memory(ws, store.forget, scope, record_id, reason="erased through the API")
        except RecordNotFoundError:
            raise HTTPException(status_code=404, detail=NOT_FOUND) from None
        return {"forgotten": record_id, "payloads_erased": erased}
