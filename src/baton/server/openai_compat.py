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
- When nothing was answered because a dependency failed (the model provider, the database,
  the question's deadline; ``baton.agents.failures``) the reply is OpenAI's error shape with
  502, 503 (``Retry-After`` when known) or 504, ``code`` the Baton ``error_code``, and the
  failed answer under ``baton``; streamed, the ``error`` object replaces the final chunk. A
  partial answer, or one the data could not give (unsafe SQL refused...), is a normal
  completion whose text says so (``baton.error_code`` / ``baton.partial``).
- Input: the question (the last user message) is at most ``MAX_QUESTION_CHARS``; content
  parts must be text parts with string text (an image or audio part is refused: no
  specialist could see it); a full server answers 503 ``overloaded`` (``admission.py``).
  Every refusal is a 400/404/503 in OpenAI's shape that does not echo the input.
- Idempotent (``baton.state.turn_keys``): the key is the ``Idempotency-Key`` header, or
  the extension field ``turn_id``, or, for a keyless request, a digest of the caller's key,
  the model and the messages held 10 minutes, so the ``openai`` SDK's own retries (same
  body, no key) never store a turn twice. A 503 after which the turn may still be stored
  carries ``x-should-retry: false``, ``turn_id`` (its key) and ``may_be_stored: true``.
- A stream open when the server stops ends at once with an ``error`` object (``code:
  server_stopping``) and ``data: [DONE]`` (``shutdown.py``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request

from baton.answer_markdown import to_markdown
from baton.events import Event, LLMToken
from baton.messages import Message
from baton.public_errors import public_answer, public_event
from baton.response import AIMessage
from baton.server.auth import Caller
from baton.server.errors import answer_headers, answer_status, openai_error, openai_error_body
from baton.server.schemas import MAX_ID_CHARS, MAX_QUESTION_CHARS, ChatCompletionRequest, ChatMessage, turn_key
from baton.server.shutdown import STOPPING, STOPPING_DETAIL, until_shutdown
from baton.server.sse import error_payload, sse_data
from baton.state import SessionNotFound
from baton.state.turn_keys import CHAT_KEY_WINDOW_S, KEY_RETENTION_S, chat_key, checked_key
from baton.workspace import Workspace

_ERROR_TYPES = {502: "server_error", 503: "service_unavailable", 504: "timeout"}


class _Refused(ValueError):
    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


def _text(message: ChatMessage, index: int) -> str:
    if isinstance(message.content, list):
        texts = []
        for n, part in enumerate(message.content):
            if part.type != "text" or not isinstance(part.text, str):
                raise _Refused(f"messages[{index}].content[{n}]: only text parts (type 'text' with a string 'text') "
                               f"are supported", f"messages[{index}].content")
            texts.append(part.text)
        return "".join(texts)
    return message.content or ""


def _split(messages: list[ChatMessage]) -> tuple[str, list[Message]] | None:
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if not users:
        return None
    last = users[-1]
    # The client's own instructions (system/developer) are kept, after the orchestrator's.
    history = [Message("system" if m.role == "developer" else m.role, _text(m, i)) for i, m in enumerate(messages[:last])
               if m.role in ("system", "developer", "user", "assistant")]
    question = _text(messages[last], last)
    if len(question) > MAX_QUESTION_CHARS:
        raise _Refused(f"the question is {len(question)} characters; the limit is {MAX_QUESTION_CHARS}", f"messages[{last}].content")
    return question, history


def _usage(message: AIMessage) -> dict[str, int]:
    usage = {"prompt_tokens": int(message.token_usage.get("input_tokens", 0)),
             "completion_tokens": int(message.token_usage.get("output_tokens", 0))}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def _key(request: Request, body: ChatCompletionRequest, caller: str) -> tuple[str, float]:
    """The turn's idempotency key and how long it is held (module docstring)."""
    given = (body.model_extra or {}).get("turn_id")
    key = turn_key(request.headers, checked_key(given) if isinstance(given, str) else None, generate=False)
    if key is not None:
        return key, KEY_RETENTION_S
    messages = [m.model_dump(mode="json") for m in body.messages]
    return chat_key(caller, body.model, [messages, body.stream, (body.model_extra or {}).get("session_id")]), CHAT_KEY_WINDOW_S


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
        try:
            split = _split(body.messages)
        except _Refused as refused:
            return openai_error(400, str(refused), param=refused.param, code="invalid_request")
        if split is None:
            return openai_error(422, "messages must contain at least one user message", param="messages")
        question, history = split
        session_id = (body.model_extra or {}).get("session_id")
        if session_id is not None and (not isinstance(session_id, str) or len(session_id) > MAX_ID_CHARS
                                       or not await ws.sessions.exists(ws.name, session_id)):
            return openai_error(404, "session not found", param="session_id", code="session_not_found")
        key, ttl = _key(request, body, caller.key_id)
        completion = _Completion(body.model, request.app.state.tracker)
        admission = request.app.state.admission
        if not body.stream:
            async with admission.slot():
                message = public_answer(await ws.answer(question, session_id, history=history, tracker=completion.tracker,
                                                        turn_key=key, key_ttl_s=ttl))
            status = answer_status(message)
            if status != 200:
                return openai_error(status, f"{message.content} ({message.error})", type=_ERROR_TYPES.get(status, "server_error"),
                                    code=message.error_code, headers=answer_headers(message), baton=message.to_dict())
            return completion.whole(message)
        slot = await admission.hold()
        frames = until_shutdown(completion.stream(ws, question, session_id, history, key, ttl), getattr(request.app.state, "shutdown", None),
                                stopping_chunk)
        return slot.streaming(frames, media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


_STOPPING_FRAMES = sse_data(openai_error_body(STOPPING_DETAIL, type="service_unavailable", code=STOPPING, streamed=True)) \
    + sse_data("[DONE]")
_SESSION_NOT_FOUND_FRAME = sse_data(openai_error_body("session not found", code="session_not_found", streamed=True))


def stopping_chunk() -> str:
    """The last frames of a streamed completion cut short by the server stopping (``shutdown.py``)."""
    return _STOPPING_FRAMES


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

    async def stream(self, ws: Workspace, question: str, session_id: str | None, history: list[Message], key: str, ttl: float):
        yield self.chunk({"role": "assistant", "content": ""})
        sent: list[str] = []
        try:
            async for item in ws.answer_stream(question, session_id, history=history, tracker=self.tracker, turn_key=key,
                                               key_ttl_s=ttl):
                if isinstance(item, Event):
                    if isinstance(item, LLMToken):
                        if item.delta:
                            sent.append(item.delta)
                            yield self.chunk({"content": item.delta})
                    else:
                        yield self.chunk({}, baton={"event": public_event(item.to_dict())})
                    continue
                async for frame in self._finish(ws, public_answer(item), "".join(sent)):
                    yield frame
        except SessionNotFound:
            yield _SESSION_NOT_FOUND_FRAME
        except Exception as exc:  # the stream has started: report in-band
            payload = error_payload(exc)
            turn = {k: payload[k] for k in ("turn_id", "may_be_stored") if k in payload}  # a turn's key to retry with
            yield sse_data(openai_error_body(payload["detail"], type="server_error", code=payload["error_code"], streamed=True, **turn))
        yield sse_data("[DONE]")

    async def _finish(self, ws: Workspace, message: AIMessage, streamed: str):
        status = answer_status(message)
        if status != 200:  # nothing was answered: an error, not a completion that says "stop"
            yield sse_data(openai_error_body(f"{message.content} ({message.error})", type=_ERROR_TYPES.get(status, "server_error"),
                                             code=message.error_code, streamed=True, baton=message.to_dict()))
            return
        markdown = to_markdown(message)
        lead = streamed.lstrip()
        rest = markdown[len(lead):] if markdown.startswith(lead) else ("\n\n" if streamed else "") + markdown
        if rest:
            yield self.chunk({"content": rest})
        shown = streamed + rest
        if " ".join(shown.split()) != " ".join(markdown.split()):
            await ws.sessions.add_reply(ws.name, message.turn_id, shown)  # found again by what the client shows
        yield self.chunk({}, "stop", usage=_usage(message), baton=message.to_dict())
