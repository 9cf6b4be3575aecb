"""An OpenAI-compatible ``POST /v1/chat/completions`` (and ``GET /v1/models``), so any chat
client can talk to a workspace's orchestrator.

The last user message is the question; earlier messages are the conversation history. The
reply's content is the answer as Markdown (text, tables, SQL); the full rich answer rides
along under the extra ``baton`` key for clients that know it. With ``stream: true`` the
reply comes as ``chat.completion.chunk`` events ending with ``data: [DONE]``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable

from fastapi import FastAPI, HTTPException
from fastapi.responses import StreamingResponse

from baton.messages import Message
from baton.server.auth import Caller
from baton.workspace.markdown import to_markdown
from baton.server.schemas import ChatCompletionRequest, ChatMessage
from baton.server.sse import sse_data

CHUNK_CHARS = 64


def _text(message: ChatMessage) -> str:
    if isinstance(message.content, list):
        return "".join(part.get("text", "") for part in message.content if isinstance(part, dict))
    return message.content or ""


def _split(messages: list[ChatMessage]) -> tuple[str, list[Message]]:
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if not users:
        raise HTTPException(status_code=422, detail="messages must contain at least one user message")
    last = users[-1]
    # The client's own instructions (system/developer) are kept, after the orchestrator's.
    history = [Message("system" if m.role == "developer" else m.role, _text(m)) for m in messages[:last]
               if m.role in ("system", "developer", "user", "assistant")]
    return _text(messages[last]), history


def register_openai_routes(app: FastAPI, workspace_of: Callable) -> None:
    @app.get("/v1/models", tags=["openai"])
    async def models(caller: Caller) -> dict[str, Any]:
        ws = workspace_of(caller)
        return {"object": "list", "data": [{"id": ws.orchestrator.name, "object": "model", "created": 0, "owned_by": ws.name}]}

    @app.post("/v1/chat/completions", tags=["openai"])
    async def chat_completions(body: ChatCompletionRequest, caller: Caller):
        ws = workspace_of(caller)
        question, history = _split(body.messages)
        message = await ws.answer(question, history=history)
        content = to_markdown(message)
        completion_id = "chatcmpl-" + uuid.uuid4().hex
        created = int(time.time())
        usage = {
            "prompt_tokens": message.token_usage.get("input_tokens", 0),
            "completion_tokens": message.token_usage.get("output_tokens", 0),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if not body.stream:
            return {
                "id": completion_id, "object": "chat.completion", "created": created, "model": body.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": usage, "baton": message.to_dict(),
            }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            return sse_data({
                "id": completion_id, "object": "chat.completion.chunk", "created": created, "model": body.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            })

        async def stream():
            yield chunk({"role": "assistant", "content": ""})
            for start in range(0, len(content), CHUNK_CHARS):
                yield chunk({"content": content[start : start + CHUNK_CHARS]})
            yield chunk({}, "stop")
            yield sse_data("[DONE]")

        return StreamingResponse(stream(), media_type="text/event-stream")
