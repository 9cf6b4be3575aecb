"""OTLP export for real: spans of an orchestrator run arrive, as OTLP protobuf over HTTP, at
a collector endpoint (a local HTTP server standing in for the collector)."""

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.observability import OTelTracker, configure_observability


@pytest.fixture
def collector():
    received: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            received.append((self.path, self.headers.get("content-type", ""), body))
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()


async def test_an_orchestrator_run_is_exported_over_otlp_http(collector, monkeypatch):
    url, received = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    tracker = configure_observability(env=dict(os.environ))
    assert isinstance(tracker, OTelTracker)

    def route(messages, tools):
        if messages[-1].role == "tool":
            return "done"
        return LLMResponse(tool_calls=[tool_call("pokemon_finance", {"question": "cards"})], usage={"input_tokens": 5, "output_tokens": 1})

    orchestrator = OrchestratorAgent("finance", model=FunctionModel(route))
    orchestrator.add_agent(TableAgent("pokemon_finance"))
    await orchestrator.ask("pokemon cards?", tracker=tracker)
    tracker.shutdown()  # flushes the batch processor
    traces = [r for r in received if r[0] == "/v1/traces"]
    assert traces and traces[0][1] == "application/x-protobuf"
    body = b"".join(r[2] for r in traces)
    assert b"invoke_workflow finance" in body and b"execute_tool pokemon_finance" in body
