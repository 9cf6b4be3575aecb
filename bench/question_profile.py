"""Baton's own CPU per pass-through model question, in process: no HTTP server, no load
generator, and (by default) no SDK, so what is left is Baton's path (issue 26, item 4).

    .venv/bin/python bench/question_profile.py [--questions 2000] [--model function|sdk] [--repeats 3]
        [--profile out.prof] [--top 40] [--pace 0.2] [--inline-hops]

The app is ``bench/server_throughput.py``'s ``app_factory`` shape (a routing model that sends
the question to a SQL specialist answering from its verified SQL, conversations on SQLite,
the same environment as ``bench/question_cpu.py``'s server), called as the raw ASGI callable:
its lifespan started, then ``POST /v1/ask`` one question at a time. The model answers at once:
``function`` is Baton's ``FunctionModel`` (isolates Baton from the SDK); ``sdk`` is the real
``openai`` SDK against ``server_throughput``'s stub in its own process, at zero latency.

``--path /health`` asks ``GET /health`` instead: what the app's middleware and routing cost
any request (no question). Prints the process CPU (every thread: the sessions thread and ``to_thread`` workers too) per
question for each repeat, and the median. ``--profile`` writes a cProfile of one more run
(threads other than the loop's are not in it: py-spy sees them,
``py-spy record --native -o out.svg -- python bench/question_profile.py``).
Timings are for this machine and drift with its load (it is shared): alternate runs to compare.

``--pace S`` idles ``S`` seconds after each answer, as concurrency 1 against a model answering
in ``S`` does: the same code then runs on a cold core. ``--inline-hops`` runs the verified
query and the turn's write on the loop's thread (``inline_hops``, a measurement only).
What it showed (2 vCPUs, ``haltpoll`` idle driver, load 0.1-0.4; medians of 2 repeats, two
rounds alternated): ``/v1/ask`` 0.89 / 0.90 ms back to back, 0.69 / 0.74 with the hops inline;
1.34 / 1.16 ms with 10 ms idle after each; 2.61 / 2.59 ms with 200 ms idle, and 2.67 / 2.45 with
the hops inline. ``GET /health`` 0.047 ms back to back, 0.557 / 0.611 with 200 ms idle (the idle loop's
own CPU over 200 ms is about 0.06 of it). So at concurrency 1 the same instructions cost about
2.5 times what they cost warm, the thread hops no longer stand out, and waking for any request
costs about 0.5 ms. Neither pinning the process to one CPU (``taskset``) nor the hops changed
that; two idle-priority spinners keeping both vCPUs from halting brought the 10 ms figure to
1.04 ms, but not the 200 ms one (2.60 ms): the caches go cold while the core waits.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import server_processes as sp  # noqa: E402  (the bench's own folder, not a package)
import server_throughput as st  # noqa: E402


def _function_model():
    """A routing model answering at once with the call ``server_throughput``'s stub makes."""
    from baton.llm.testing import FunctionModel, tool_call
    from baton.messages import LLMResponse

    def route(messages, tools):
        return LLMResponse(tool_calls=[tool_call("sales", {"question": st.VERIFIED}, id="call_1")],
                           usage={"input_tokens": 50, "output_tokens": 10})

    return FunctionModel(route, model="stub-model")


def build_app(home: Path, model_kind: str, stub_url: str | None):
    """``server_throughput.app_factory``, with the model swapped when ``model_kind`` is ``function``."""
    os.environ.update({"BENCH_HOME": str(home), "BENCH_STUB_URL": stub_url or "http://127.0.0.1:9/v1",
                       "BATON_HOME": str(home / "state"), "BATON_LOG_LEVEL": "warning",
                       "BATON_MAX_IN_FLIGHT": "10000", "BATON_ADMISSION_MAX_BUSY": "1.0", "BATON_ADMISSION_MAX_LAG": "100",
                       "BATON_ADMISSION_MAX_DELAY": "1000"})
    if model_kind == "sdk":
        return st.app_factory()
    import baton.llm

    real, model = baton.llm.OpenAICompatible, _function_model()
    baton.llm.OpenAICompatible = lambda *a, **k: model  # type: ignore[assignment,misc]  (app_factory's one model)
    try:
        return st.app_factory()
    finally:
        baton.llm.OpenAICompatible = real  # type: ignore[misc]


def inline_hops() -> None:
    """Run the two thread hops of a question on the event loop's thread: the verified query
    (``SQLConnection.run_in_thread``) and the turn's write (the sessions bulkhead). For
    measurement only: what the hops cost a question, warm and on a cold core. Never how Baton
    runs (a slow query or a locked state file would stall every question on the loop)."""
    from baton.dependency_waits import timed_in_thread
    from baton.specialists.sql.connection import SQLConnection
    from baton.state.bulkheads import Bulkhead

    async def query_here(self, fn, *args):
        return timed_in_thread(fn)(*args)

    threaded = Bulkhead.run

    async def write_here(self, fn, *args, timeout=None):
        if self.name != "sessions":
            return await threaded(self, fn, *args, timeout=timeout)
        self._admit()
        result = self._call(timed_in_thread(fn), args)
        self._succeeded()
        return result

    SQLConnection.run_in_thread = query_here  # type: ignore[method-assign]
    Bulkhead.run = write_here  # type: ignore[method-assign]


class Asgi:
    """The app driven as uvicorn drives it: lifespan, then one HTTP request at a time."""

    def __init__(self, app, path: str = "/v1/ask") -> None:
        self.app = app
        self.method, self.path = ("POST", path) if path == "/v1/ask" else ("GET", path)
        self.events: asyncio.Queue = asyncio.Queue()
        self.lifespan_done: asyncio.Queue = asyncio.Queue()
        self.task: asyncio.Task | None = None
        self.body = json.dumps({"question": st.ROUTED}).encode()
        self.headers = [(b"host", b"bench"), (b"content-type", b"application/json"),
                        (b"authorization", b"Bearer " + st.KEY.encode()), (b"content-length", str(len(self.body)).encode())]

    async def start(self) -> None:
        async def receive():
            return await self.events.get()

        async def send(message):
            await self.lifespan_done.put(message)

        self.task = asyncio.create_task(self.app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send))
        await self.events.put({"type": "lifespan.startup"})
        message = await self.lifespan_done.get()
        assert message["type"] == "lifespan.startup.complete", message

    async def stop(self) -> None:
        await self.events.put({"type": "lifespan.shutdown"})
        await self.lifespan_done.get()
        assert self.task is not None
        await self.task

    async def ask(self) -> int:
        post = self.method == "POST"
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1", "method": self.method,
                 "scheme": "http", "path": self.path, "raw_path": self.path.encode(), "root_path": "", "query_string": b"",
                 "headers": self.headers if post else self.headers[:1], "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000), "state": {}}
        sent = False
        status = 0
        finished = asyncio.Event()

        async def receive():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": self.body if post else b"", "more_body": False}
            await finished.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished.set()

        await self.app(scope, receive, send)
        return status


async def run(app, questions: int, repeats: int, profile: str | None, top: int, path: str = "/v1/ask",
              pace: float = 0.0) -> list[float]:
    asgi = Asgi(app, path)
    await asgi.start()
    figures = []
    try:
        for _ in range(50):  # imports, connections, caches
            assert await asgi.ask() == 200
        for _ in range(repeats):
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(questions):
                status = await asgi.ask()
                if pace:
                    await asyncio.sleep(pace)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            assert status == 200, status
            figures.append(1000 * cpu / questions)
            print(f"{questions} questions: {figures[-1]:.3f} ms CPU each ({1000 * wall / questions - 1000 * pace:.3f} ms wall)", flush=True)
        if profile:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(questions):
                await asgi.ask()
            profiler.disable()
            profiler.dump_stats(profile)
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(top)
            stats.sort_stats("cumulative").print_stats(top)
    finally:
        await asgi.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", choices=["function", "sdk"], default="function")
    parser.add_argument("--profile", help="write a cProfile of one more run to this file and print its top functions")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--path", default="/v1/ask", help="/v1/ask (POSTed questions), or a GET route such as /health: "
                        "what the HTTP app alone costs a request")
    parser.add_argument("--pace", type=float, default=0.0,
                        help="seconds idle after each answer (0.2: concurrency 1 at a 200 ms model's pace, a cold core); "
                        "the idle loop's own CPU is counted too")
    parser.add_argument("--inline-hops", action="store_true",
                        help="run the verified query and the turn's write on the loop's thread (``inline_hops``): "
                        "what the two thread hops cost; a measurement, not a way to serve")
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop",
                        help="the event loop (uvicorn, as ``baton serve`` runs it, picks uvloop when installed)")
    args = parser.parse_args()
    if args.inline_hops:
        inline_hops()
    home = sp.make_home()
    stub = None
    stub_url = None
    if args.model == "sdk":
        port = sp.free_port()
        stub = st._start_stub(port, 0.0)
        sp.wait_listening(port)
        stub_url = f"http://127.0.0.1:{port}/v1"
    try:
        app = build_app(home, args.model, stub_url)
        factory = None
        if args.loop == "uvloop":
            import uvloop

            factory = uvloop.new_event_loop
        with asyncio.Runner(loop_factory=factory) as runner:
            figures = runner.run(run(app, args.questions, args.repeats, args.profile, args.top, args.path, args.pace))
    finally:
        if stub is not None:
            sp.stop(stub, 5.0)
    hops = ", thread hops inline" if args.inline_hops else ""
    pace = f", {args.pace * 1000:g} ms idle after each" if args.pace else ""
    print(f"median {statistics.median(figures):.3f} ms CPU per request of {args.path} ({args.model} model, {args.loop}{hops}{pace}; load average "
          f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
