"""Throughput, latency and server CPU per question of Baton's HTTP server under load.

    .venv/bin/python bench/server_throughput.py [--seconds 4] [--latency 0.2] [--workers 1 2]

A stub model server (its own process, asyncio, answering every call after ``--latency``
seconds) plays the provider. The server under test runs in its own process tree through
``baton.cli.serving.serve_factory`` — what ``baton serve --workers N`` runs — with one
workspace: a routing model (the real ``openai`` SDK against the stub) and a SQL specialist
over a SQLite file holding a verified question, conversations on SQLite.

Two kinds of question:
- *pass-through model question*: the routing model (one SDK call, ``--latency``) sends the
  question to the SQL specialist, which answers with data from its verified SQL (no model
  call), passed through (early exit): the model latency chain is one call;
- *verified question*: matched by the orchestrator, no model call at all.

For ``--workers`` 1 and 2, each kind at concurrency 1, 50 and 200 (closed loop: each client
sends its next question when the previous answer arrives) for ``--seconds``: questions/s
against the ideal (concurrency / chain latency for model questions), p50/p99 of admitted
questions, how many were refused (503 ``overloaded``; the client then waits the
``Retry-After`` second, as a well-behaved client does), and the server's CPU per answered
question (user + system CPU of the whole server process tree / answers; the CPU spent
refusing is in it).

Targets (issue 13): server CPU per pass-through model question <= 4 ms including its SDK
call; at concurrency 200, admitted questions' p99 <= 2 x the model latency chain; 2
workers >= 1.7 x 1 worker (verified questions, CPU-bound) on 2 cores. The load generator
and the stub share the machine's cores with the server: figures are for this machine.

Last, the bare ``openai`` SDK's call alone, one at a time in the bench's own process: at the
stub's pace (as the concurrency-1 rows see it) and back to back. It reads the CPU column: on
a virtual machine a call made after an idle gap costs more than the same call made while the
core is busy (caches and the vCPU go cold), and the SDK's share is not Baton's to cut.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUTED = "Show me the monthly revenue table for 2025 please"
VERIFIED = "What was revenue by month in 2025?"
KEY = "bench-key"


# --- the server under test (built in each worker process) ---------------------------------------


def app_factory():
    """The app ``serve_factory`` runs in every worker (configured by environment)."""
    from baton.agents import OrchestratorAgent
    from baton.llm import OpenAICompatible
    from baton.server import ApiKeys, Workspaces, create_app
    from baton.specialists.sql.agent import SQLAgent
    from baton.specialists.sql.engines import SQLConnection
    from baton.verified import VerifiedQuestion
    from baton.workspace import SessionStore, Workspace

    home = Path(os.environ["BENCH_HOME"])
    model = OpenAICompatible("stub-model", api_key="stub", base_url=os.environ["BENCH_STUB_URL"], context_window=128_000)
    verified = [VerifiedQuestion(VERIFIED, "SELECT month, revenue FROM sales ORDER BY month", "sales")]
    orchestrator = OrchestratorAgent("bench-orchestrator", model=model, verified=verified, context_window=128_000)
    orchestrator.add_agent(SQLAgent(SQLConnection(f"sqlite:///{home / 'sales.sqlite'}", id="sales"), name="sales",
                                    description="Monthly revenue", verified=verified, present=True))
    ws = Workspace("bench", orchestrator, SessionStore(home / f"sessions-{os.getpid()}.sqlite"), model=model)
    return create_app(Workspaces([ws]), ApiKeys({KEY: "bench"}))


# --- the stub provider (its own process) ----------------------------------------------------------


def _completion() -> bytes:
    body = json.dumps({
        "id": "chatcmpl-b", "object": "chat.completion", "created": 1, "model": "stub-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "sales", "arguments": json.dumps({"question": VERIFIED})}}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}).encode()
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body


async def _stub_main(port: int, latency: float) -> None:
    reply = _completion()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                await asyncio.sleep(latency)
                writer.write(reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


# --- the load generator: a minimal keep-alive HTTP/1.1 client ----------------------------------------


class Client:
    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def ask(self, question: str) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        body = json.dumps({"question": question}).encode()
        self.writer.write(b"POST /v1/ask HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\nauthorization: Bearer "
                          + KEY.encode() + b"\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        await self.writer.drain()
        assert self.reader is not None
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        close = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
            elif name.lower() == b"connection" and value.strip().lower() == b"close":
                close = True
        await self.reader.readexactly(length)
        if close:
            self.writer.close()
            self.writer = None
        return status


async def _load(port: int, question: str, concurrency: int, seconds: float) -> tuple[list[float], int, int]:
    latencies: list[float] = []
    refused = 0
    failed = 0
    stop = time.monotonic() + seconds

    async def one_client() -> None:
        nonlocal refused, failed
        client = Client(port)
        while time.monotonic() < stop:
            started = time.perf_counter()
            try:
                status = await client.ask(question)
            except (ConnectionError, asyncio.IncompleteReadError):
                failed += 1
                client.writer = None
                continue
            if status == 200:
                latencies.append(time.perf_counter() - started)
            elif status == 503:
                refused += 1
                await asyncio.sleep(1.0)  # as a client honouring Retry-After: 1 does
            else:
                failed += 1
        if client.writer is not None:
            client.writer.close()

    await asyncio.gather(*(one_client() for _ in range(concurrency)))
    return latencies, refused, failed


# --- the SDK call alone: what the same machine spends on it, for reading the CPU column ----------------


async def _sdk_call_cpu(stub_url: str, seconds: float) -> float:
    """CPU ms per ``chat.completions.create`` of the bare ``openai`` SDK, one call at a time
    against a stub, in this process (nothing else runs here meanwhile): the share of a model
    question's CPU that is the SDK's, measured at the same pace as the server's."""
    import openai

    client = openai.AsyncOpenAI(api_key="stub", base_url=stub_url, max_retries=0)
    messages = [{"role": "system", "content": "Route the question."}, {"role": "user", "content": ROUTED}]
    tools = [{"type": "function", "function": {"name": "sales", "description": "Monthly revenue", "parameters": {
        "type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}}]
    for _ in range(3):  # connection, imports
        await client.chat.completions.create(model="stub-model", messages=messages, tools=tools)
    calls, cpu, stop = 0, time.process_time(), time.monotonic() + seconds
    while time.monotonic() < stop:
        await client.chat.completions.create(model="stub-model", messages=messages, tools=tools)
        calls += 1
    cpu = time.process_time() - cpu
    await client.close()
    return 1000 * cpu / calls


def _start_stub(port: int, latency: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r}); import asyncio, server_throughput as b; "
                             f"asyncio.run(b._stub_main({port}, {latency}))"], start_new_session=True)


# --- process plumbing ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tree_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live children (from /proc)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
        for child in children:  # uvicorn's workers may have children of their own (renderers: not here)
            pids += [int(c) for c in Path(f"/proc/{child}/task/{child}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _wait_listening(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("stub did not start")


def _wait_ready(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
                if sock.recv(100).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not start")


def _start_server(port: int, workers: int, env: dict[str, str]) -> subprocess.Popen:
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); from baton.cli.serving import serve_factory; "
            f"serve_factory('server_throughput:app_factory', '127.0.0.1', {port}, workers={workers}, log_level='warning')")
    return subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)


def _make_home() -> Path:
    home = Path(tempfile.mkdtemp(prefix="baton-bench-"))
    with sqlite3.connect(home / "sales.sqlite") as conn:
        conn.execute("CREATE TABLE sales (month TEXT, revenue INTEGER)")
        conn.executemany("INSERT INTO sales VALUES (?, ?)", [(f"2025-{m:02d}", 1000 + 37 * m) for m in range(1, 13)])
    return home


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 50, 200])
    args = parser.parse_args()

    home = _make_home()
    stub_port = _free_port()
    stub = _start_stub(stub_port, args.latency)
    env = {**os.environ, "BENCH_HOME": str(home), "BENCH_STUB_URL": f"http://127.0.0.1:{stub_port}/v1",
           "BATON_HOME": str(home / "state"), "BATON_LOG_LEVEL": "warning"}
    results: dict[tuple[int, str, int], float] = {}
    print(f"stub model latency {args.latency * 1000:.0f} ms; {args.seconds:g} s per run; {os.cpu_count()} cores")
    print(f"{'workers':>7} {'question':>12} {'conc':>5} {'q/s':>8} {'ideal':>8} {'of ideal':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'refused':>8} {'failed':>6} {'CPU ms/q':>9}")
    try:
        for workers in args.workers:
            port = _free_port()
            server = _start_server(port, workers, env)
            try:
                _wait_ready(port)
                for kind, question, chain in (("model", ROUTED, args.latency), ("verified", VERIFIED, 0.0)):
                    for _ in range(8 * (workers > 1)):  # one connection at a time: a burst is accepted by one worker
                        asyncio.run(_load(port, question, 1, 0.01))
                    asyncio.run(_load(port, question, 4 * workers, 1.0))  # warm-up: imports, pools, connections (every worker)
                    for concurrency in args.concurrency:
                        before = _tree_cpu(server.pid)
                        started = time.perf_counter()
                        latencies, refused, failed = asyncio.run(_load(port, question, concurrency, args.seconds))
                        wall = time.perf_counter() - started
                        cpu = _tree_cpu(server.pid) - before
                        rate = len(latencies) / wall
                        ideal = concurrency / chain if chain else float("nan")
                        results[(workers, kind, concurrency)] = rate
                        share = f"{100 * rate / ideal:7.1f}%" if chain else "      -"
                        print(f"{workers:>7} {kind:>12} {concurrency:>5} {rate:8.1f} {ideal:8.1f} {share:>8} "
                              f"{1000 * _pct(latencies, 0.5):8.1f} {1000 * _pct(latencies, 0.99):8.1f} {refused:>8} {failed:>6} "
                              f"{1000 * cpu / max(1, len(latencies)):9.2f}")
            finally:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(30)
        # the SDK's own share, one call at a time: at the model's pace (as at concurrency 1) and back to back
        eager_port = _free_port()
        eager = _start_stub(eager_port, 0.0)
        try:
            _wait_listening(eager_port)
            paced = asyncio.run(_sdk_call_cpu(f"http://127.0.0.1:{stub_port}/v1", args.seconds))
            back_to_back = asyncio.run(_sdk_call_cpu(f"http://127.0.0.1:{eager_port}/v1", args.seconds))
        finally:
            os.killpg(eager.pid, signal.SIGTERM)
            eager.wait(10)
        print(f"the openai SDK's call alone (this process, one at a time): {paced:.2f} ms CPU at the stub's "
              f"{args.latency * 1000:.0f} ms pace, {back_to_back:.2f} ms back to back")
    finally:
        os.killpg(stub.pid, signal.SIGTERM)
        stub.wait(10)
    if len(args.workers) >= 2 and 1 in args.workers and 2 in args.workers:
        for kind in ("model", "verified"):
            top = max(args.concurrency)
            one, two = results.get((1, kind, top)), results.get((2, kind, top))
            if one and two:
                print(f"2 workers vs 1 ({kind}, concurrency {top}): {two / one:.2f}x")
    print(statistics.__name__ and "targets: CPU/model question <= 4 ms; p99 at 200 <= 2 x chain; 2 workers >= 1.7 x 1 worker")


if __name__ == "__main__":
    main()
