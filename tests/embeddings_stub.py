"""A local OpenAI-compatible ``POST /v1/embeddings`` endpoint for tests that use the real openai SDK.

``EmbeddingsHandler`` answers with ``vector(text, dimension)`` per input (a subclass chooses the
vectors), returns the items out of order (the SDK must sort them), and fails on purpose for the
models ``denied`` (401) and ``broken`` (500); ``serve`` runs one on a free port.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def fake_vector(text: str, dimension: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).standard_normal(dimension).round(6).tolist()


class EmbeddingsHandler(BaseHTTPRequestHandler):
    requests: list[dict] = []

    @staticmethod
    def vector(text: str, dimension: int) -> list[float]:
        return fake_vector(text, dimension)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if body["model"] == "denied":
            return self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}})
        if body["model"] == "broken":
            return self._send(500, {"error": {"message": "boom", "type": "server_error"}})
        dimension = body.get("dimensions", 8)
        data = [{"object": "embedding", "index": i, "embedding": self.vector(text, dimension)}
                for i, text in enumerate(body["input"])]
        self._send(200, {"object": "list", "data": data[::-1], "model": body["model"], "usage": {"prompt_tokens": 3, "total_tokens": 3}})

    def _send(self, status: int, payload: dict) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(handler: type[EmbeddingsHandler]) -> Iterator[str]:
    """The handler on a free loopback port; yields the base URL (``http://127.0.0.1:N/v1``)."""
    handler.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
