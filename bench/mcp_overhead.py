"""What MCP costs: ``ask`` of a verified demo question through ``baton mcp`` (stdio, the
official SDK's client) against the same question through the Python API (``Workspace.answer``).

    .venv/bin/python bench/mcp_overhead.py
    .venv/bin/python bench/mcp_overhead.py --asks 50

Both sides answer the demo's verified question with no model (zero LLM calls), on the same
demo database under a temporary ``BATON_HOME``, each after warm-up asks. Per ask it prints
wall time (median, p90) and CPU time: for the Python API the process's own CPU; for MCP
the client's CPU plus that of the ``baton mcp`` process and its children (read from
``/proc``, Linux), so
the difference is the protocol's whole cost on both ends (JSON-RPC framing, pydantic
validation, the pipe, structured content, progress notifications). ``ask (+ PNG chart)``
adds rendering the chart as an image, which the Python API does not do at all. On a shared
machine wall time includes waiting for a core: the load average is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

QUESTION = "What was Pokemon revenue by month in 2025?"


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's live descendants: the stdio server and
    the chart renderer's worker process it starts."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])  # ppid, counted after the command name
        cpu[pid] = (int(fields[11]) + int(fields[12])) / ticks
    mine, total = {os.getpid()}, 0.0
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                total += cpu[pid]
                changed = True
    return total


def summary(label: str, walls: list[float], cpus: list[float], split: tuple[list[float], list[float]] | None = None) -> str:
    walls_ms = sorted(w * 1000 for w in walls)
    p90 = walls_ms[min(len(walls_ms) - 1, int(len(walls_ms) * 0.9))]
    line = (f"{label:<28} wall median {statistics.median(walls_ms):7.1f} ms  p90 {p90:7.1f} ms   "
            f"CPU {statistics.mean(cpus) * 1000:7.1f} ms/ask")
    if split is not None:
        line += f"  (client {statistics.mean(split[0]) * 1000:.1f} + server {statistics.mean(split[1]) * 1000:.1f})"
    return line


async def python_api(home: Path, asks: int, warmup: int) -> tuple[list[float], list[float]]:
    from baton.demo.workspace import build_demo_workspace

    async with build_demo_workspace(home / "demo") as ws:
        for _ in range(warmup):
            assert (await ws.answer(QUESTION)).data
        walls, cpus = [], []
        for _ in range(asks):
            wall, cpu = time.perf_counter(), time.process_time()
            answer = await ws.answer(QUESTION)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            assert answer.data and answer.metadata.get("llm_calls") == 0
    return walls, cpus


async def over_stdio(home: Path, asks: int, warmup: int, chart_image: bool) -> tuple[list[float], list[float], tuple[list[float], list[float]]]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=str(Path(sys.executable).with_name("baton")), args=["mcp"],
                                   env={"BATON_HOME": str(home)})
    arguments = {"question": QUESTION, "chart_image": chart_image}
    async with Client(params, read_timeout_seconds=120) as client:
        for _ in range(warmup):
            assert not (await client.call_tool("ask", arguments)).is_error
        walls, cpus, client_cpus, server_cpus = [], [], [], []
        for _ in range(asks):
            wall, cpu, server_cpu = time.perf_counter(), time.process_time(), children_cpu()
            result = await client.call_tool("ask", arguments)
            walls.append(time.perf_counter() - wall)
            client_cpus.append(time.process_time() - cpu)
            server_cpus.append(children_cpu() - server_cpu)
            cpus.append(client_cpus[-1] + server_cpus[-1])
            assert result.structured_content["row_count"] == 12 and result.structured_content["llm_calls"] == 0
    return walls, cpus, (client_cpus, server_cpus)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--asks", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="baton-bench-mcp-") as folder:
        home = Path(folder)
        os.environ.pop("BATON_MODEL", None)
        os.environ["BATON_HOME"] = str(home)
        api = await python_api(home, args.asks, args.warmup)  # also builds the demo database once
        mcp = await over_stdio(home, args.asks, args.warmup, chart_image=False)
        png = await over_stdio(home, args.asks, args.warmup, chart_image=True)
    print(f"{args.asks} asks of a verified question (no model), after {args.warmup} warm-up asks; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(summary("Python API (answer)", *api))
    print(summary("MCP stdio (ask)", *mcp))
    print(summary("MCP stdio (ask + PNG chart)", *png))
    wall = statistics.median(mcp[0]) - statistics.median(api[0])
    cpu = statistics.mean(mcp[1]) - statistics.mean(api[1])
    print(f"MCP overhead per ask: wall {wall * 1000:+.1f} ms (median), CPU {cpu * 1000:+.1f} ms (client + server)")


if __name__ == "__main__":
    asyncio.run(main())
