"""Feedback, insights and memory endpoints. Each resolves the caller's workspace from the
key and opens that workspace's memory scope; ids from another workspace are simply not
found (404, the same as ids that don't exist)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from fastapi import FastAPI, HTTPException

from baton.server.auth import Caller
from baton.server.schemas import DismissInsightRequest, FeedbackRequest
from baton.workspace import SessionNotFound

NOT_FOUND = "not found"


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

        store, scope = _memory(workspace_of(caller))
        if not await asyncio.to_thread(dismiss_insight, store, scope, body.insight_id):
            raise HTTPException(status_code=404, detail="insight not found")
        return {"dismissed": body.insight_id}

    @app.get("/v1/memory", tags=["memory"])
    async def memory_list(caller: Caller, kind: str | None = None, limit: int = 100) -> dict[str, Any]:
        store, scope = _memory(workspace_of(caller))
        records = await asyncio.to_thread(store.list_records, scope, kind=kind, limit=min(max(limit, 1), 1000))
        return {"records": [_record_view(r) for r in records]}

    @app.get("/v1/memory/{record_id}", tags=["memory"])
    async def memory_show(record_id: str, caller: Caller) -> dict[str, Any]:
        from baton.memory import RecordNotFoundError

        store, scope = _memory(workspace_of(caller))
        try:
            record = await asyncio.to_thread(store.get, scope, record_id)
            history = await asyncio.to_thread(store.history, scope, record_id)
        except RecordNotFoundError:
            raise HTTPException(status_code=404, detail=NOT_FOUND) from None
        return {"record": _record_view(record),
                "history": [{"seq": e.seq, "type": e.type, "at": e.recorded_at, "erased": e.payload is None} for e in history]}

    @app.delete("/v1/memory/{record_id}", tags=["memory"])
    async def memory_forget(record_id: str, caller: Caller) -> dict[str, Any]:
        """Erase a record: a tombstone in the journal, its text gone from every projection."""
        from baton.memory import RecordNotFoundError

        store, scope = _memory(workspace_of(caller))
        try:
            erased = await asyncio.to_thread(store.forget, scope, record_id, reason="erased through the API")
        except RecordNotFoundError:
            raise HTTPException(status_code=404, detail=NOT_FOUND) from None
        return {"forgotten": record_id, "payloads_erased": erased}
