"""Throughput, latency, refusals and server CPU per question of Baton's HTTP server under load.

    .venv/bin/python bench/server_throughput.py [--seconds 4] [--latency 0.2 2 10] [--workers 1]
        [--concurrency 1 50 200 1000] [--scenarios mixed fairness slow-headers streams] [--streams 5000]

A stub model server (its own process, asyncio, answering every call after ``--latency``
seconds) plays the provider. The server under test runs in its own process tree through
``baton.cli.serving.serve_factory`` — what ``baton serve --workers N`` runs; one worker is
served in the process started, as ``baton serve`` does without ``--workers`` — with one
workspace: a routing model (the real ``openai`` SDK against the stub) and a SQL specialist
over a SQLite file holding a verified question, conversations on SQLite; two keys.

Two kinds of question:
- *pass-through model question*: the routing model (one SDK call, ``--latency``) sends the
  question to the SQL specialist, which answers with data from its verified SQL (no model
  call), passed through (early exit): the model latency chain is one call;
- *verified question*: matched by the orchestrator, no model call at all.

For each model latency, each ``--workers`` and ``--concurrency`` (closed loop: each client
sends its next question when the previous answer arrives). Clients start evenly over
``--ramp`` chains (1 by default: they arrive at the rate they will keep, as users do, not in
the same millisecond; ``--ramp 0`` starts them all at once, a burst, measured from the
start, its last answers included). The measuring window opens a chain after the last client
started and lasts ``--seconds`` (a whole number of chains, at least two); it counts the
answers that arrive in it, the latencies of the questions asked in it (however late they
end) and the refusals met in it; refusals met before it opened (while clients were
starting) are printed apart (``ramp ref``). Printed: questions/s against the ideal
(concurrency / chain), p50/p99 of admitted questions and p99 over the chain, refusals (503
``overloaded``; the client then waits its ``Retry-After``, printed: the median), failures,
the server's CPU per answered question (user + system CPU of the whole server process tree
in the window / answers; the CPU spent refusing is in it) and its CPU share (CPU seconds /
window seconds: 1.0 is one core). Verified questions (chain 0) ramp over a second and run at
the first latency only (they call no model). Each window also says how busy the machine's
cores and the load generator were (over 0.8 of a core: the clients, not the server, may set
the pace).

Scenarios (``--scenarios``, at ``--scenario-latency``, 2 s by default):
- ``mixed``: concurrency 500, half verified questions, half model questions: neither starves;
- ``fairness``: key A at concurrency 900 and key B at 10, model questions: B's refusals and p99;
- ``slow-headers``: 50 clients trickling a header byte a second for longer than the header
  timeout, beside 10 normal clients: their answers, and how many slow ones were closed (408);
- ``streams``: ``--streams`` streamed questions held open (the stub then answers after 600 s):
  the server worker's resident memory before and with them open, per stream.

Then the bare ``openai`` SDK's call alone, one at a time in the bench's own process: at the
stub's pace (as the concurrency-1 rows see it) and back to back; and the server's CPU per
model question minus that (what is Baton's: engineer C's ``bench/question_cpu.py`` measures
Baton's own share per question in detail).

Targets (issue 26): one worker answers >= 90 % of ideal with 0 refusals at (2 s, c=200),
(10 s, c=200) and (10 s, c=1,000); at (2 s, c=1,000) what its CPU allows, refusing the rest
with 503 + ``Retry-After``; p99 of admitted questions <= 1.2 x chain (<= 2 x at 200 ms);
verified at c=1,000: admitted p99 <= 250 ms; streams <= 64 KiB each; fairness: B refused
<= 1 %, p99 <= 1.2 x chain. The load generator and the stub share the machine's cores with
the server: figures are for this machine, and say its load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import server_load
from server_processes import (
    admission,
    free_port,
    machine_cpu,
    make_home,
    pct,
    start_server,
    stop,
    tree_cpu,
    wait_listening,
    wait_ready,
    worker_rss,
)

HERE = Path(__file__).resolve().parent
ROUTED = "Show me the monthly revenue table for 2025 please"
VERIFIED = "What was revenue by month in 2025?"
KEY = "bench-key"
KEY_B = "bench-key-b"
STREAM_LATENCY = 600.0


# --- the server under test (built in each worker process) ---------------------------------------


def app_factory():
    """The app ``serve_factory`` runs in every worker (configured by environment)."""
    from baton.agents import OrchestratorAgent
    from baton.llm import OpenAICompatible
    from baton.server import ApiKeys, Workspaces, create_app
    from baton.specialists.sql.agent import SQLAgent
    from baton.specialists.sql.connection import SQLConnection
    from baton.state import SessionStore
    from baton.verified import VerifiedQuestion
    from baton.workspace import Workspace

    home = Path(os.environ["BENCH_HOME"])
    model = OpenAICompatible("stub-model", api_key="stub", base_url=os.environ["BENCH_STUB_URL"], context_window=128_000,
                             timeout=float(os.environ.get("BATON_LLM_TIMEOUT", "30")))
    verified = [VerifiedQuestion(VERIFIED, "SELECT month, revenue FROM sales ORDER BY month", "sales")]
    orchestrator = OrchestratorAgent("bench-orchestrator", model=model, verified=verified, context_window=128_000)
    orchestrator.add_agent(SQLAgent(SQLConnection(f"sqlite:///{home / 'sales.sqlite'}", id="sales"), name="sales",
                                    description="Monthly revenue", verified=verified, present=True))
    ws = Workspace("bench", orchestrator, SessionStore(home / f"sessions-{os.getpid()}.sqlite"), model=model)
    return create_app(Workspaces([ws]), ApiKeys({KEY: "bench", KEY_B: "bench"}))


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


HEADER = (f"{'workers':>7} {'chain s':>7} {'question':>12} {'conc':>5} {'q/s':>8} {'ideal':>8} {'of ideal':>8} {'p50 ms':>8} "
          f"{'p99 ms':>8} {'p99/chain':>9} {'refused':>8} {'RA s':>4} {'failed':>6} {'CPU ms/q':>9} {'CPU share':>9} {'ramp ref':>8}")


def _row(workers: int, chain: float, kind: str, concurrency: int, outcome: server_load.Outcome, wall: float, cpu: float) -> str:
    rate = outcome.answered / wall
    ideal = concurrency / chain if chain else float("nan")
    share = f"{100 * rate / ideal:7.1f}%" if chain else "      -"
    p99 = pct(outcome.latencies, 0.99)
    ratio = f"{p99 / chain:9.2f}" if chain else "        -"
    retry = f"{statistics.median(outcome.retry_after):4.0f}" if outcome.retry_after else "   -"
    return (f"{workers:>7} {chain:7g} {kind:>12} {concurrency:>5} {rate:8.1f} {ideal:8.1f} {share:>8} "
            f"{1000 * pct(outcome.latencies, 0.5):8.1f} {1000 * p99:8.1f} {ratio} {outcome.refused:>8} {retry} {outcome.failed:>6} "
            f"{1000 * cpu / max(1, outcome.answered):9.2f} {cpu / wall:9.2f} {outcome.refused_before:>8}")


def _measured(server: subprocess.Popen, window: server_load.Window, loads) -> tuple[list[server_load.Outcome], float, float]:
    """Run ``loads`` (coroutines over ``window``) together: their outcomes, the window's seconds
    and the server's CPU seconds in it (read when it opens and when it closes, or when the
    last answer of a burst arrived)."""
    def reading() -> tuple[float, float, float, float]:
        return tree_cpu(server.pid), time.process_time(), machine_cpu(), time.perf_counter()

    async def at(moment: float) -> tuple[float, float, float, float]:
        await asyncio.sleep(max(0.0, moment - time.monotonic()))
        return reading()

    async def together():
        opened = asyncio.ensure_future(at(window.opens))
        closed = None if window.tail else asyncio.ensure_future(at(window.closes))
        outcomes = await asyncio.gather(*loads)
        return outcomes, await opened, (await closed if closed else reading())

    outcomes, start, end = asyncio.run(together())
    cpu, own, machine, wall = (b - a for a, b in zip(start, end, strict=True))
    cores = os.cpu_count() or 1
    print(f"{'':>12}the machine's {cores} cores {100 * machine / wall / cores:.0f}% busy in the window, the load generator "
          f"{own / wall:.2f} of a core" + (": the clients, not the server, may set the pace" if own / wall > 0.8 else ""), flush=True)
    return outcomes, wall, cpu


def _window(args, chain: float) -> server_load.Window:
    """Clients start over ``--ramp`` chains (a burst when 0), the window opens a chain after the
    last has started and lasts ``--seconds``: a whole number of chains, at least two (a
    closed-loop client asks once per chain). Questions that call no model ramp over a second."""
    pace = chain if chain >= 1 else 1.0
    seconds = max(2, round(args.seconds / chain)) * chain if chain >= 1 else args.seconds
    ramp = args.ramp * pace
    if not ramp:
        return server_load.Window.after(0.0, 0.0, seconds, tail=True)
    return server_load.Window.after(ramp, ramp + pace, seconds)


def _latency_runs(args, latency: float, port: int, server: subprocess.Popen, workers: int, results: dict) -> None:
    kinds = [("model", ROUTED, latency)] + ([("verified", VERIFIED, 0.0)] if latency == args.latency[0] else [])
    for kind, question, chain in kinds:
        asyncio.run(server_load.load(port, question, 4 * workers, 1.0, KEY))  # warm-up: imports, pools, connections
        for concurrency in args.concurrency:
            window = _window(args, chain)
            (outcome,), wall, cpu = _measured(server, window, [server_load.load(port, question, concurrency, window, KEY)])
            results[(workers, kind, latency, concurrency)] = (outcome, wall, cpu)
            print(_row(workers, chain, kind, concurrency, outcome, wall, cpu), flush=True)
            if concurrency >= 200:
                print(f"{'':>12}{admission(port)}", flush=True)


def _scenarios(args, port: int, server: subprocess.Popen) -> None:
    chain = args.scenario_latency
    if "mixed" in args.scenarios:
        window = _window(args, chain)
        loads = [server_load.load(port, VERIFIED, 250, window, KEY), server_load.load(port, ROUTED, 250, window, KEY)]
        (verified, model), wall, cpu = _measured(server, window, loads)
        print(f"mixed, concurrency 500 (250 verified + 250 model questions, {chain:g} s chain):")
        print(_row(1, 0.0, "verified", 250, verified, wall, cpu))
        print(_row(1, chain, "model", 250, model, wall, cpu))
    if "fairness" in args.scenarios:
        window = _window(args, chain)
        loads = [server_load.load(port, ROUTED, 900, window, KEY), server_load.load(port, ROUTED, 10, window, KEY_B)]
        (a, b), wall, cpu = _measured(server, window, loads)
        print(f"fairness: key A at concurrency 900, key B at 10 (model questions, {chain:g} s chain; CPU columns: both keys):")
        print(_row(1, chain, "key A", 900, a, wall, cpu))
        print(_row(1, chain, "key B", 10, b, wall, cpu))
        print(f"key B refused {100 * b.refused / max(1, b.asked):.1f}% of {b.asked} asked; key A {100 * a.refused / max(1, a.asked):.1f}% of {a.asked}")
    if "slow-headers" in args.scenarios:
        slow_for = 15.0  # longer than the default header timeout (10 s)
        window = server_load.Window.after(0.0, 0.0, slow_for, tail=True)
        loads = [server_load.slow_headers(port, args.slow_clients, slow_for), server_load.load(port, ROUTED, 10, window, KEY)]
        ((closed, still_open), normal), wall, cpu = _measured(server, window, loads)
        print(f"slow headers: {args.slow_clients} clients trickling a header byte a second for {slow_for:g} s: {closed} answered "
              f"408 / closed by the server, {still_open} still open; beside them 10 normal clients:")
        print(_row(1, chain, "model", 10, normal, wall, cpu))


def _streams(args, env: dict[str, str]) -> None:
    stub_port, port = free_port(), free_port()
    stub = _start_stub(stub_port, STREAM_LATENCY)
    server = start_server(port, 1, {**env, "BENCH_STUB_URL": f"http://127.0.0.1:{stub_port}/v1",  # streams held open:
                                     "BATON_LLM_TIMEOUT": "900", "BATON_QUESTION_DEADLINE": "900"})  # no timeout ends them
    try:
        wait_listening(stub_port)
        wait_ready(port)
        asyncio.run(server_load.load(port, VERIFIED, 4, 1.0, KEY))  # warm-up
        time.sleep(1.0)
        before = worker_rss(server.pid)

        async def hold() -> tuple[tuple[int, int, int], int, str]:
            ready, release = asyncio.Event(), asyncio.Event()
            task = asyncio.ensure_future(server_load.open_streams(port, args.streams, KEY, ROUTED, ready, release,
                                                                        ramp_s=args.stream_ramp))
            await ready.wait()
            await asyncio.sleep(2.0)  # their model calls are made (or queued in the SDK's pool)
            rss = worker_rss(server.pid)
            state = admission(port)
            release.set()
            return await task, rss, state

        (opened, refusals, never), during, state = asyncio.run(hold())
        grown = during - before
        print(f"streams: {opened} opened over {args.stream_ramp:g} s ({refusals} refusals met, retried after Retry-After; {never} never opened); the worker's RSS {before / 2**20:.0f} MiB -> "
              f"{during / 2**20:.0f} MiB: {grown / max(1, opened) / 1024:.1f} KiB per open stream; {state}")
    finally:
        began = time.monotonic()
        stop(server, float(os.environ.get("BENCH_STOP_S", "30")))
        print(f"the server ended {time.monotonic() - began:.1f} s after SIGTERM")
        stop(stub, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--latency", type=float, nargs="*", default=[0.2, 2.0, 10.0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 50, 200, 1000])
    parser.add_argument("--scenarios", nargs="*", default=["mixed", "fairness", "slow-headers", "streams"],
                        choices=["mixed", "fairness", "slow-headers", "streams"])
    parser.add_argument("--scenario-latency", type=float, default=2.0)
    parser.add_argument("--ramp", type=float, default=1.0,
                        help="chains over which the clients start (0: all at once, a burst, measured from the start)")
    parser.add_argument("--streams", type=int, default=5000)
    parser.add_argument("--stream-ramp", type=float, default=30.0, help="seconds over which the streams start")
    parser.add_argument("--slow-clients", type=int, default=50)
    parser.add_argument("--no-sdk", action="store_true", help="skip the SDK-alone measurement")
    args = parser.parse_args()

    files = server_load.raise_open_files(3 * max([*args.concurrency, args.streams, 1000]) + 1024)
    home = make_home()
    env = {**os.environ, "BENCH_HOME": str(home), "BATON_HOME": str(home / "state"), "BATON_LOG_LEVEL": "warning"}
    results: dict = {}
    print(f"{args.seconds:g} s per run (a whole number of chains); {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f} at the start; {files}")
    print(HEADER)
    stubs: dict[float, int] = {}
    processes = []
    try:
        for latency in sorted({*args.latency, *([args.scenario_latency] if set(args.scenarios) - {"streams"} else [])}):
            stubs[latency] = free_port()
            processes.append(_start_stub(stubs[latency], latency))
        for workers in args.workers:
            for latency in args.latency:
                port = free_port()
                server = start_server(port, workers, {**env, "BENCH_STUB_URL": f"http://127.0.0.1:{stubs[latency]}/v1"})
                try:
                    wait_ready(port)
                    _latency_runs(args, latency, port, server, workers, results)
                finally:
                    stop(server, 30)
        if set(args.scenarios) - {"streams"}:
            port = free_port()
            server = start_server(port, 1, {**env, "BENCH_STUB_URL": f"http://127.0.0.1:{stubs[args.scenario_latency]}/v1"})
            try:
                wait_ready(port)
                asyncio.run(server_load.load(port, ROUTED, 4, 1.0, KEY))
                _scenarios(args, port, server)
            finally:
                stop(server, 30)
        if "streams" in args.scenarios:
            _streams(args, env)
        if not args.no_sdk and args.latency:
            _sdk_lines(args, stubs, results)
    finally:
        for process in processes:
            stop(process, 10)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def _sdk_lines(args, stubs: dict[float, int], results: dict) -> None:
    """The SDK's own share, one call at a time: at the model's pace (as at concurrency 1) and back to back;
    then the server's CPU per model question less it."""
    latency = args.latency[0]
    eager_port = free_port()
    eager = _start_stub(eager_port, 0.0)
    try:
        wait_listening(eager_port)
        paced = asyncio.run(_sdk_call_cpu(f"http://127.0.0.1:{stubs[latency]}/v1", max(args.seconds, 2 * latency)))
        back_to_back = asyncio.run(_sdk_call_cpu(f"http://127.0.0.1:{eager_port}/v1", args.seconds))
    finally:
        stop(eager, 10)
    print(f"the openai SDK's call alone (this process, one at a time): {paced:.2f} ms CPU at the stub's "
          f"{latency * 1000:.0f} ms pace, {back_to_back:.2f} ms back to back")
    for concurrency in (1, 50, 200):
        found = results.get((1, "model", latency, concurrency))
        if found:
            outcome, _, cpu = found
            total = 1000 * cpu / max(1, len(outcome.latencies))
            sdk = paced if concurrency == 1 else back_to_back
            print(f"server CPU per model question at concurrency {concurrency}: {total:.2f} ms, less the SDK alone "
                  f"({sdk:.2f} ms): {total - sdk:.2f} ms")


if __name__ == "__main__":
    main()
