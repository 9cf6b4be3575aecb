"""What the page offers an analyst beyond asking: examples, the schema, edited SQL, saved
verified questions and CSV files. Each route is an adapter over a workspace function:

| route | workspace function |
|---|---|
| ``GET /v1/examples`` | ``baton.workspace.examples.example_questions`` (the empty page's examples) |
| ``GET /v1/schema`` | ``baton.workspace.examples.schema_overview`` (the schema browser) |
| ``POST /v1/sql/run`` | ``baton.workspace.edited_sql.run_edited_sql`` (edit an answer's SQL, run it again) |
| ``POST /v1/verified`` | ``baton.workspace.verified.save_verified_question`` ("Save as verified question") |
| ``GET /v1/turns/{turn_id}/csv`` | ``baton.workspace.export.answer_csv`` ("Download CSV") |
| ``POST /v1/semantic/draft`` | ``baton.semantic.draft.draft_model`` ("Draft a semantic model", as ``baton semantic init``) |

The workspace is the caller's (the key's, or the login session's); a turn of another
workspace is 404, the same as one that does not exist. Refusals are typed: a 422 body
``{"detail": <reason>, "error_code": <code>}`` (``unsafe_sql`` with the safety ``rule`` for
an edit the safety check refused). Routes that run SQL pass admission control like a
question does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from baton.public_errors import error_body, public_answer
from baton.server.auth import Caller
from baton.server.errors import error_response, respond
from baton.server.schemas import MAX_ID_CHARS
from baton.state import SessionNotFound
from baton.workspace.answer import stored_json
from baton.workspace.edited_sql import MAX_SQL_CHARS

MAX_QUESTION_CHARS = 2_000


class RunSQLRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turn_id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="The answer whose SQL was edited.")
    sql: str = Field(min_length=1, max_length=MAX_SQL_CHARS, description="The edited SQL (one SELECT).")


class SaveVerifiedRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turn_id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="The answer whose SQL answers the question.")
    question: str | None = Field(None, min_length=1, max_length=MAX_QUESTION_CHARS,
                                 description="The question, as people ask it (default: the question asked).")


NOT_FOUND = error_body("answer not found", "not_found")


def _can_draft(ws: Any) -> bool:
    """Whether the page offers "Draft a semantic model": a workspace with a SQL database and no model."""
    from baton.workspace.examples import sql_connections

    return getattr(ws, "semantic", None) is None and bool(sql_connections(ws))


def register_analyst_routes(app: FastAPI, workspace_of: Callable) -> None:
    @app.get("/v1/examples", tags=["page"])
    async def examples(caller: Caller) -> dict[str, Any]:
        """Questions this workspace answers: its verified questions, metric questions and questions its documents answer."""
        from baton.workspace.examples import example_questions, metric_questions

        ws = workspace_of(caller)
        found = await asyncio.to_thread(example_questions, ws)  # reads the document folder
        return {**found, "metrics": await metric_questions(ws), "can_draft_semantic": _can_draft(ws)}

    @app.post("/v1/semantic/draft", tags=["page"])
    async def draft_semantic(caller: Caller) -> Response:
        """A draft semantic model of the workspace's database, as ``baton semantic init`` writes
        it: the YAML, what it decided and what to check. The running workspace is not changed:
        its model is chosen where it starts (``--semantic FILE``), so every replica and every
        user answers alike; the page offers the file and that command."""
        from baton.semantic.draft import draft_model, draft_text
        from baton.workspace.examples import sql_connections

        ws = workspace_of(caller)
        if getattr(ws, "semantic", None) is not None:
            return error_response(409, "this workspace already has a semantic model", "semantic_model_exists")
        connections = sql_connections(ws)
        if not connections:
            return error_response(422, "this workspace has no SQL database to draft a model from", "no_database")
        async with app.state.admission.slot():
            draft = await draft_model(connections[0], "draft")
        return JSONResponse({"yaml": draft_text(draft), "filename": "semantic.yaml", "decisions": list(draft.decisions),
                             "checklist": [item.to_dict() for item in draft.checklist],
                             "command": "baton serve --database URL --semantic semantic.yaml"})

    @app.get("/v1/schema", tags=["page"])
    async def schema(caller: Caller) -> dict[str, Any]:
        """The tables, columns and row counts of the workspace's databases."""
        from baton.workspace.examples import schema_overview

        return await schema_overview(workspace_of(caller))

    @app.post("/v1/sql/run", tags=["page"])
    async def run_sql(body: RunSQLRequest, caller: Caller) -> Response:
        """Run an answer's SQL as edited, through the same safety checks and engine guard as
        model-written SQL; the result is a new turn of the answer's conversation."""
        from baton.workspace.edited_sql import EditedSQLRefused, run_edited_sql

        ws = workspace_of(caller)
        try:
            async with app.state.admission.slot():
                message = await run_edited_sql(ws, body.turn_id, body.sql)
        except SessionNotFound:
            return respond(404, NOT_FOUND)
        except EditedSQLRefused as exc:
            extra: dict[str, Any] = {"rule": exc.rule} if exc.rule else {}
            return error_response(422, str(exc), exc.code, **extra)
        return Response(stored_json(public_answer(message)), media_type="application/json")

    @app.post("/v1/verified", tags=["page"])
    async def save_verified(body: SaveVerifiedRequest, caller: Caller) -> Response:
        """Save an answer's question and SQL as a verified question: checked (safe, runs,
        slots bind), kept in memory with provenance, answered from then on without a model."""
        from baton.workspace.verified import VerifiedQuestionError, save_verified_question

        ws = workspace_of(caller)
        found = await ws.sessions.find_turn(ws.name, body.turn_id)
        if found is None:
            return respond(404, NOT_FOUND)
        session_id, asked, answer = found
        if not answer.query:
            return error_response(422, "this answer has no SQL to verify", "no_sql")
        question = body.question or answer.metadata.get("edited_from_question") or asked
        try:
            async with app.state.admission.slot():
                saved = await save_verified_question(ws, question, answer.query, answer=answer, source="page",
                                                     user_id=caller.key_id, session_id=session_id)
        except VerifiedQuestionError as exc:
            return error_response(422, str(exc), "verified_question_refused")
        return JSONResponse({"question": saved.question, "sql": saved.sql, "agent": saved.agent, "record_id": saved.record_id})

    @app.get("/v1/turns/{turn_id}/csv", tags=["page"])
    async def turn_csv(turn_id: str, caller: Caller, part: str | None = Query(None, max_length=200)) -> Response:
        """The rows of one answer as a CSV file (every row the query returned)."""
        from baton.workspace.export import NoTableError, answer_csv, filename

        ws = workspace_of(caller)
        if len(turn_id) > MAX_ID_CHARS:
            return respond(404, NOT_FOUND)
        found = await ws.sessions.find_turn(ws.name, turn_id)
        if found is None:
            return respond(404, NOT_FOUND)
        answer = found[2]
        try:
            text = answer_csv(answer, part)
        except NoTableError as exc:
            return error_response(404, str(exc), "no_table")
        return Response(text.encode("utf-8"), media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": f'attachment; filename="{filename(answer, part)}"', "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store"})
