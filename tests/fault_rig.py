"""A workspace whose every model call goes to a stub provider that fails on command.

The stub answers by *call site*, read from the request itself:

- ``routing``: the orchestrator's call (its tools are the specialists);
- ``specialist``: the SQL specialist's first call (its tool is ``run_sql``);
- ``repair``: the SQL specialist's call after a failed query (a ``run_sql`` tool result
  holding an error is in the conversation);
- ``planner``: the pipeline planner's call (its system prompt asks for a plan).

``FaultyProvider.faults[site] = kind`` makes every call at ``site`` fail with ``kind``:
``429`` (with ``Retry-After``), ``500``, ``cut`` (the body or stream stops half-way and the
connection drops), ``hang`` (no answer for a long time), ``malformed`` (a 200 whose body is
not JSON), ``tool_json`` (a tool call whose arguments are not JSON). Healthy questions get
real answers: "sales" questions route to the ``sales`` specialist, which runs real SQL on a
SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from baton.agents import OrchestratorAgent
from baton.llm import OpenAICompatible, RetryPolicy
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.connection import SQLConnection
from baton.state import SessionStore
from baton.workspace import Workspace
from stub_llm_server import Reply, StubLLMServer, openai_error, openai_text, openai_tool_calls

SECRET_KEY = "sk-test-SECRETKEY0123456789abcdef"
FAST_POLICY = RetryPolicy(attempts=3, base_delay=0.02, max_delay=0.05, jitter=0, call_timeout=0.4, max_retry_after=0.1)
EXPECTED = {"429": "model_rate_limited", "500": "model_unavailable", "cut": "model_unavailable", "hang": "model_timeout",
            "malformed": "model_bad_response"}


def site_of(body: dict[str, Any]) -> str:
    tools = [t["function"]["name"] for t in body.get("tools") or ()]
    messages = body.get("messages") or []
    if "run_sql" in tools:
        tool_results = [m for m in messages if m.get("role") == "tool"]
        last = str(tool_results[-1].get("content", "")).lower() if tool_results else ""
        return "repair" if ("error" in last or "do not match" in last) else "specialist"
    if tools:
        return "routing"
    if messages and "plan" in str(messages[0].get("content", "")).lower():
        return "planner"
    return "other"


def fault_reply(kind: str, streaming: bool) -> Reply:
    if kind == "429":
        return openai_error(429, "slow down", type="rate_limit_error", headers={"Retry-After": "0.05"})
    if kind == "500":
        return Reply(status=500, raw=b"<html><body><h1>500</h1><pre>system prompt: You are DatabaseOrchestrator</pre></body></html>",
                     headers={"content-type": "text/html"})
    if kind == "cut":
        if streaming:
            return Reply(sse=[(None, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "stub",
                                      "choices": [{"index": 0, "delta": {"content": "Part"}, "finish_reason": None}]})] * 3,
                         cut_after=1)
        return Reply(raw=json.dumps({"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * 200}}]}).encode(),
                     cut_after=40)
    if kind == "hang":
        return Reply(delay=30, body={})
    if kind == "malformed":
        return Reply(raw=b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assis')
    if kind == "auth_echo":
        return openai_error(401, f"Invalid key. Request headers: Authorization: Bearer {SECRET_KEY}", type="invalid_request_error")
    raise ValueError(kind)


class FaultyProvider:
    """A ``StubLLMServer`` whose replies follow the call site and the faults set."""

    def __init__(self, stub: StubLLMServer) -> None:
        self.stub = stub
        self.faults: dict[str, str] = {}
        self.calls: dict[str, int] = {}
        self.gate: threading.Event | None = None  # when set for a site: its calls wait for it
        self.gated_site: str | None = None
        self._lock = threading.Lock()
        stub.responder = self.respond

    def respond(self, kind: str, body: Any) -> Reply | None:
        if kind != "openai" or not isinstance(body, dict):
            return None
        site = site_of(body)
        with self._lock:
            self.calls[site] = self.calls.get(site, 0) + 1
        if self.gate is not None and site == self.gated_site:
            self.gate.wait(30)
        streaming = bool(body.get("stream"))
        fault = self.faults.get(site)
        if fault == "tool_json" and site == "routing":
            return openai_tool_calls([("call_bad", "sales", '{"question": "unterminated')])
        if fault is not None and fault != "tool_json":
            return fault_reply(fault, streaming)
        return self.healthy(site, body, streaming)

    async def calls_at(self, site: str, expected: int, within: float = 10.0) -> int:
        """The calls ``site`` has received, once ``expected`` have arrived or ``within`` s passed.

        The stub counts a call when its thread has read the request; on a loaded machine the
        last request of a hang (the SDK gave up on it after the call timeout) can still be
        unread in the socket when the answer is already back, so a count read at once is low."""
        deadline = time.monotonic() + within
        while self.calls.get(site, 0) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return self.calls.get(site, 0)

    def healthy(self, site: str, body: dict[str, Any], streaming: bool) -> Reply:
        messages = body["messages"]
        question = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        if site == "routing":
            if messages[-1].get("role") == "tool":
                return _text("The specialist could not answer.", streaming)
            targets = ["sales", "inventory"] if "both" in question else ["sales"]
            return openai_tool_calls([(f"call_{t}", t, json.dumps({"question": f"{t}: {question}"})) for t in targets])
        if site == "specialist" and messages[-1].get("role") == "tool":  # the query ran: say what it shows
            return _text("Revenue by unit, from the sales table.", streaming)
        if site == "specialist":
            sql = "SELECT nope FROM sales" if "[repair]" in question else "SELECT unit, revenue FROM sales ORDER BY unit"
            return openai_tool_calls([("call_sql", "run_sql", json.dumps({"sql": sql}))])
        if site == "repair":
            return openai_tool_calls([("call_sql2", "run_sql", json.dumps({"sql": "SELECT unit, revenue FROM sales ORDER BY unit"}))])
        if site == "planner":
            plan = {"question": question, "stages": [{"stage_id": "a", "description": "a", "tool": "query_database",
                                                     "question": "sales by unit"}]}
            return openai_text(json.dumps(plan))
        return _text("Revenue by unit is in the table.", streaming)


def _text(content: str, streaming: bool) -> Reply:
    if not streaming:
        return openai_text(content)
    from stub_llm_server import openai_stream_text

    return openai_stream_text([content])


def sales_database(folder: Path) -> str:
    path = folder / "sales.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS sales (unit TEXT, revenue INTEGER)")
        conn.execute("DELETE FROM sales")
        conn.executemany("INSERT INTO sales VALUES (?, ?)", [("epson", 800), ("pokemon", 1200)])
    return f"sqlite:///{path}"


class TriesBySite(OpenAICompatible):
    """The stub's model, counting per call site the tries Baton makes (``tries``). The stub
    counts what reached it; on a loaded machine a try can end at the call timeout before its
    request was sent, and the policy's count of tries is Baton's, so it is counted here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tries: dict[str, int] = {}

    def _count(self, messages: Any, tools: Any) -> None:
        from baton.llm.openai_compat import to_openai_messages, to_openai_tools

        site = site_of({"messages": to_openai_messages(messages), "tools": to_openai_tools(tools) if tools else None})
        self.tries[site] = self.tries.get(site, 0) + 1

    async def complete(self, messages: Any, tools: Any = None, **kwargs: Any) -> Any:
        self._count(messages, tools)
        return await super().complete(messages, tools, **kwargs)

    def stream(self, messages: Any, tools: Any = None, **kwargs: Any) -> Any:
        self._count(messages, tools)
        return super().stream(messages, tools, **kwargs)


def faulty_workspace(stub: StubLLMServer, folder: Path, *, name: str = "faults", policy: RetryPolicy = FAST_POLICY,
                     deadline_s: float = 20.0, planning: bool = False) -> Workspace:
    """A workspace of two SQL specialists on one SQLite file, every model call to ``stub``.
    The default deadline is far past the policy's three 0.4 s tries, so that on a loaded
    machine a count of tries is never cut short by the deadline instead."""
    model = TriesBySite("stub-model", api_key=SECRET_KEY, base_url=stub.openai_base_url, timeout=30)
    url = sales_database(folder)
    orchestrator = OrchestratorAgent(f"{name}-orchestrator", model=model, policy=policy)
    connections = []
    for agent in ("sales", "inventory"):
        connection = SQLConnection(url, id=agent)
        connections.append(connection)
        orchestrator.add_agent(SQLAgent(connection, name=agent, description=f"{agent} figures", model=model))
    ws = Workspace(name, orchestrator, SessionStore(folder / f"{name}-sessions.sqlite"), model=model)
    ws.deadline_s = deadline_s
    for connection in connections:
        ws.own(connection.aclose)
    ws.own(model.aclose)
    if planning:
        from baton.workspace.planning import attach_planning

        attach_planning(ws, model)
    return ws
