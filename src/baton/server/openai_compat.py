"""An OpenAI-compatible ``POST /v1/chat/completions`` (and ``GET /v1/models``), so any chat
client can talk to a workspace's orchestrator, through the workspace's one answer path.

- ``model`` names the orchestrator of the caller's workspace (its name, or the workspace's);
  ``GET /v1/models`` lists it. Any other model is a 404 in OpenAI's error shape
  (``code: model_not_found``), as OpenAI answers for a model that does not exist.
- The last user message is the question; earlier messages are the conversation. When the
  last assistant message is one of this workspace's answers, the question continues that
  answer's session, so follow-ups ("Show this as a pie chart", "Show only the top 5") work
  from a chat client's history without any session id. A client may also send the
  extension field ``session_id``.
- The reply's content is the answer as Markdown (text, tables, SQL); the full rich answer
  rides along under the extra ``baton`` key (data, SQL, chart spec, ...). ``usage`` counts
  the tokens of every model call behind the answer.
- ``stream: true`` streams for real: progress events as they happen, each in a chunk whose
  delta is empty and whose ``baton.event`` is the event; the orchestrator's own text token
  by token as its model streams it; then whatever of the Markdown answer was not streamed
  yet (tables, SQL, or the whole answer of a specialist); then a final chunk with
  ``finish_reason: "stop"``, ``usage`` and the ``baton`` answer; then ``data: [DONE]``.
  Text a model says before calling a tool is streamed as it comes and stays in the reply
  (the reply is still found again by its exact text). A failure after the stream started
  is an ``error`` object in the stream, which OpenAI's SDKs raise as an ``APIError``.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from baton.events import Event
from baton.messages import Message
from baton.response import AIMessage
from baton.server.auth import Caller
from baton.server.schemas import ChatCompletionRequest, ChatMessage
from baton.server.sse import sse_data
from baton.workspace import SessionNotFound, Workspace
from baton.workspace.markdown import to_markdown

log = logging.getLogger(__name__)


def openai_error(status: int, message: str, *, type: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": type, "param": param, "code": code}}, status_code=status)


def _text(message: ChatMessage) -> str:
    if isinstance(message.content, list):
        return "".join(part.get("text", "") for part in message.content if isinstance(part, dict))
    return message.content or ""


def _split(messages: list[ChatMessage]) -> tuple[str, list[Message]] | None:
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if not users:
        return None
    last = users[-1]
    # The client's own instructions (system/developer) are kept, after the orchestrator's.
    history = [Message("system" if m.role == "developer" else m.role, _text(m)) for m in messages[:last]
               if m.role in ("system", "developer", "user", "assistant")]
    return _text(messages[last]), history


def _usage(message: AIMessage) -> dict[str, int]:
    usage = {"prompt_tokens": int(message.token_usage.get("input_tokens", 0)),
             "completion_tokens": int(message.token_usage.get("output_tokens", 0))}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def model_names(ws: Workspace) -> set[str]:
    return {ws.orchestrator.name, ws.name}


def register_openai_routes(app: FastAPI, workspace_of: Callable) -> None:
    @app.get("/v1/models", tags=["openai"])
    async def models(caller: Caller) -> dict[str, Any]:
        ws = workspace_of(caller)
        return {"object": "list", "data": [{"id": ws.orchestrator.name, "object": "model", "created": 0, "owned_by": ws.name}]}

    @app.post("/v1/chat/completions", tags=["openai"])
    async def chat_completions(body: ChatCompletionRequest, caller: Caller, request: Request):
        ws = workspace_of(caller)
        if body.model not in model_names(ws):
            return openai_error(404, f"The model `{body.model}` does not exist or you do not have access to it "
                                     f"(this key's workspace answers as `{ws.orchestrator.name}`).",
                                param="model", code="model_not_found")
        split = _split(body.messages)
        if split is None:
            return openai_error(422, "messages must contain at least one user message", param="messages")
        question, history = split
        session_id = (body.model_extra or {}).get("session_id")
        if session_id is not None and (not isinstance(session_id, str) or not await ws.sessions.exists(ws.name, session_id)):
            return openai_error(404, "session not found", param="session_id", code="session_not_found")
        completion = _Completion(body.model, request.app.state.tracker)
        if not body.stream:
            message = await ws.answer(question, session_id, history=history, tracker=completion.tracker)
            return completion.whole(message)
        return StreamingResponse(completion.stream(ws, question, session_id, history), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


class _Completion:
    """One chat completion: its id, and the chunks or the whole reply it sends."""

    def __init__(self, model: str, tracker: Any) -> None:
        self.id = "chatcmpl-" + uuid.uuid4().hex
        self.created = int(time.time())
        self.model = model
        self.tracker = tracker

    def whole(self, message: AIMessage) -> dict[str, Any]:
        return {
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": to_markdown(message)}, "finish_reason": "stop"}],
            "usage": _usage(message), "baton": message.to_dict(),
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return sse_data({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra,
        })

    async def stream(self, ws: Workspace, question: str, session_id: str | None, history: list[Message]):
        yield self.chunk({"role": "assistant", "content": ""})
        sent: list[str] = []
        try:
            async for item in ws.answer_stream(question, session_id, history=history, tracker=self.tracker):
                if isinstance(item, Event):
                    if item.type == "llm.token":
                        delta = item.data.get("delta") or ""
                        if delta:
                            sent.append(delta)
                            yield self.chunk({"content": delta})
                    else:
                        yield self.chunk({}, baton={"event": item.to_dict()})
                    continue
                async for frame in self._finish(ws, item, "".join(sent)):
                    yield frame
        except SessionNotFound:
            yield sse_data({"error": {"message": "session not found", "type": "invalid_request_error", "code": "session_not_found"}})
        except Exception as exc:  # the stream has started: report in-band
            log.exception("chat completion stream failed")
            yield sse_data({"error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error", "code": None}})
        yield sse_data("[DONE]")

    async def _finish(self, ws: Workspace, message: AIMessage, streamed: str):
        markdown = to_markdown(message)
        lead = streamed.lstrip()
        rest = markdown[len(lead):] if markdown.startswith(lead) else ("\n\n" if streamed else "") + markdown
        if rest:
            yield self.chunk({"content": rest})
        shown = streamed + rest
        if " ".join(shown.split()) != " ".join(markdown.split()):
            await ws.sessions.add_reply(ws.name, message.turn_id, shown)  # found again by what the client shows
        yield self.chunk({}, "stop", usage=_usage(message), baton=message.to_dict())
