"""A local HTTP server speaking the OpenAI and Anthropic wire formats, scripted per test.

The real ``openai`` and ``anthropic`` SDKs talk to it over a real socket, so the tests
exercise their transports, their error classes, their SSE parsers and our translation
of all of it. Each test queues ``Reply`` objects; every request pops the first queued
reply for its endpoint (optionally only one scripted for the request's model) and is
recorded in ``requests``. An unscripted request gets a 599 naming what was missing, so a
test that forgets a reply fails loudly instead of hanging.

Endpoints: ``POST /v1/chat/completions`` (kind ``openai``), ``POST /v1/messages``
(``anthropic``), ``GET /v1/models`` (``openai-models`` or ``anthropic-models``, told
apart by the ``anthropic-version`` header; unscripted, they list ``openai_models`` /
``anthropic_models``).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Hold:
    """Stop an SSE reply before frame ``before`` until ``release`` is set (or ``timeout``
    seconds pass); ``passed`` is set when the frame is about to be sent. Proves by events,
    not timing, what a client saw before the provider finished."""

    before: int
    release: threading.Event = field(default_factory=threading.Event)
    passed: threading.Event = field(default_factory=threading.Event)
    timeout: float = 10.0


@dataclass
class Reply:
    """One scripted HTTP answer: a JSON body, or an SSE stream of ``(event, data)`` pairs."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    sse: list[tuple[str | None, Any]] | None = None
    delay: float = 0.0  # seconds before the status line is sent (a slow provider)
    model: str | None = None  # only answer requests for this model
    hold: Hold | None = None  # an SSE reply waits before one of its frames
    raw: bytes | None = None  # the body as these exact bytes (malformed JSON, an HTML page)
    cut_after: int | None = None  # send only this many body bytes (SSE: frames), then drop the connection


@dataclass
class RecordedRequest:
    kind: str
    method: str
    path: str
    headers: dict[str, str]
    body: Any


# --- reply builders: OpenAI chat completions ---------------------------------------------


def openai_text(content: str, *, model: str = "stub-model", usage: tuple[int, int] = (11, 7), for_model: str | None = None) -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        },
        model=for_model,
    )


def openai_tool_calls(calls: list[tuple[str, str, str]], *, content: str | None = None, model: str = "stub-model") -> Reply:
    """``calls`` are ``(id, name, arguments_json_text)``; the text may be deliberately broken."""
    return Reply(
        body={
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "tool_calls": [
                            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                            for cid, name, args in calls
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
        }
    )


def _chunk(delta: dict[str, Any], finish: str | None = None, model: str = "stub-model") -> dict[str, Any]:
    return {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def openai_stream_text(pieces: list[str], *, usage: tuple[int, int] = (5, 3)) -> Reply:
    events: list[tuple[str | None, Any]] = [(None, _chunk({"role": "assistant", "content": ""}))]
    events += [(None, _chunk({"content": p})) for p in pieces]
    events.append((None, _chunk({}, "stop")))
    events.append(
        (None, {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "stub-model", "choices": [],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}})
    )
    events.append((None, "[DONE]"))
    return Reply(sse=events)


def openai_stream_tool_call(call_id: str, name: str, argument_pieces: list[str], *, finish: str | None = "tool_calls") -> Reply:
    """A streamed tool call whose arguments arrive in pieces (as real providers send them)."""
    events: list[tuple[str | None, Any]] = [
        (None, _chunk({"role": "assistant", "tool_calls": [
            {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}))
    ]
    events += [
        (None, _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})) for piece in argument_pieces
    ]
    if finish:
        events.append((None, _chunk({}, finish)))
    events.append((None, "[DONE]"))
    return Reply(sse=events)


# --- reply builders: Anthropic messages -------------------------------------------------


def anthropic_message(content: list[dict[str, Any]], *, stop_reason: str = "end_turn", model: str = "claude-stub",
                      usage: tuple[int, int] = (13, 8), for_model: str | None = None) -> Reply:
    return Reply(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        },
        model=for_model,
    )


def anthropic_text(text: str, **kw: Any) -> Reply:
    return anthropic_message([{"type": "text", "text": text}], **kw)


def anthropic_stream(blocks: list[dict[str, Any]], *, stop_reason: str = "end_turn", usage: tuple[int, int] = (9, 4)) -> Reply:
    """An Anthropic event stream. ``blocks``: ``{"type": "text", "pieces": [...]}`` or
    ``{"type": "tool_use", "id", "name", "pieces": [partial_json, ...]}``."""
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_s", "type": "message", "role": "assistant", "model": "claude-stub", "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": 1}}}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in block["pieces"]]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in block["pieces"]]
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                     "usage": {"output_tokens": usage[1]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return Reply(sse=events)


# --- reply builders: errors ---------------------------------------------------------------


def openai_error(status: int, message: str, *, type: str = "invalid_request_error", code: str | None = None,
                 headers: dict[str, str] | None = None, for_model: str | None = None) -> Reply:
    return Reply(status=status, body={"error": {"message": message, "type": type, "param": None, "code": code}},
                 headers=headers or {}, model=for_model)


def anthropic_error(status: int, type: str, message: str, *, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, body={"type": "error", "error": {"type": type, "message": message}}, headers=headers or {})


# --- the server ---------------------------------------------------------------------------


class StubLLMServer:
    """Start with ``start()`` (random port on 127.0.0.1), stop with ``stop()``."""

    def __init__(self) -> None:
        self._queues: dict[str, list[Reply]] = {}
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.openai_models: list[dict[str, Any]] = []
        self.anthropic_models: list[dict[str, Any]] = []
        self._stopping = threading.Event()
        self.responder: Callable[[str, Any], Reply | None] | None = None
        """Called as ``responder(kind, body)`` when nothing is scripted for a request (in the
        server's thread): answer by content, e.g. for several processes asking at once."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # scripting
    def script(self, kind: str, *replies: Reply) -> None:
        with self._lock:
            self._queues.setdefault(kind, []).extend(replies)

    def pending(self, kind: str) -> int:
        with self._lock:
            return len(self._queues.get(kind, ()))

    def requests_of(self, kind: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == kind]

    def _pop(self, kind: str, model: str | None) -> Reply | None:
        with self._lock:
            queue = self._queues.get(kind, [])
            for i, reply in enumerate(queue):
                if reply.model is None or reply.model == model:
                    return queue.pop(i)
        return None

    # lifecycle
    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    def start(self) -> StubLLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                kind = "anthropic-models" if "anthropic-version" in self.headers else "openai-models"
                server._handle(self, kind, None)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                kind = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}.get(self.path.split("?")[0], "unknown")
                server._handle(self, kind, body)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default backlog of 5 refuses concurrent tests
            daemon_threads = True

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), name="stub-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a scripted delay
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # request handling (runs in the server's threads)
    def _handle(self, handler: BaseHTTPRequestHandler, kind: str, body: Any) -> None:
        self.requests.append(RecordedRequest(kind, handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body))
        model = body.get("model") if isinstance(body, dict) else None
        reply = self._pop(kind, model)
        if reply is None and self.responder is not None:
            reply = self.responder(kind, body)
        if reply is None:
            if kind == "openai-models":
                reply = Reply(body={"object": "list", "data": self.openai_models})
            elif kind == "anthropic-models":
                data = self.anthropic_models
                reply = Reply(body={"data": data, "has_more": False,
                                    "first_id": data[0]["id"] if data else None,
                                    "last_id": data[-1]["id"] if data else None})
            else:
                reply = Reply(status=599, body={"error": {"message": f"stub: nothing scripted for {kind} {model}",
                                                          "type": "stub_error"}})
        if reply.delay and self._stopping.wait(reply.delay):
            return
        try:
            self._write(handler, reply)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass

    @staticmethod
    def _write(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.sse is not None:
            handler.send_response(reply.status)
            handler.send_header("content-type", "text/event-stream")
            for k, v in reply.headers.items():
                handler.send_header(k, v)
            handler.send_header("connection", "close")
            handler.end_headers()
            for index, (event, data) in enumerate(reply.sse):
                if reply.cut_after is not None and index >= reply.cut_after:
                    handler.close_connection = True
                    return
                if reply.hold is not None and index == reply.hold.before:
                    reply.hold.release.wait(reply.hold.timeout)
                    reply.hold.passed.set()
                text = data if isinstance(data, str) else json.dumps(data)
                frame = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
                handler.wfile.write(frame.encode())
                handler.wfile.flush()
            return
        payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        handler.send_response(reply.status)
        if "content-type" not in {k.lower() for k in reply.headers}:
            handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        for k, v in reply.headers.items():
            handler.send_header(k, v)
        handler.end_headers()
        if reply.cut_after is not None:
            handler.wfile.write(payload[: reply.cut_after])
            handler.wfile.flush()
            handler.close_connection = True
            return
        handler.wfile.write(payload)



@contextlib.contextmanager
def running_stub() -> Iterator[StubLLMServer]:
    """A started ``StubLLMServer``, stopped on exit. Test modules wrap it in a fixture."""
    server = StubLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
