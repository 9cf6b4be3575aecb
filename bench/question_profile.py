"""Baton's own CPU per pass-through model question, in process: no HTTP server, no load
generator, and (by default) no SDK, so what is left is Baton's path (issue 26, item 4).

    .venv/bin/python bench/question_profile.py [--questions 2000] [--model function|sdk] [--repeats 3]
        [--profile out.prof] [--top 40]

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


async def run(app, questions: int, repeats: int, profile: str | None, top: int, path: str = "/v1/ask") -> list[float]:
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
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            assert status == 200, status
            figures.append(1000 * cpu / questions)
            print(f"{questions} questions: {figures[-1]:.3f} ms CPU each ({1000 * wall / questions:.3f} ms wall)", flush=True)
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
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop",
                        help="the event loop (uvicorn, as ``baton serve`` runs it, picks uvloop when installed)")
    args = parser.parse_args()
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
            figures = runner.run(run(app, args.questions, args.repeats, args.profile, args.top, args.path))
    finally:
        if stub is not None:
            sp.stop(stub, 5.0)
    print(f"median {statistics.median(figures):.3f} ms CPU per request of {args.path} ({args.model} model, {args.loop}; load average "
          f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
