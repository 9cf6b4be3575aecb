"""The tool-calling loop's own CPU cost per iteration (target: under 0.2 ms with 10 tools).

The model answers instantly (a ScriptedModel, then a bare ChatModel that does no copying,
to isolate the loop from the test double), the 10 tools return at once, so whatever CPU
time is left is the loop's: context ledger (token counts of the new messages), pressure
checks, dispatch, gather, events. Measured with ``time.process_time`` over many runs of
10 iterations each (9 tool turns calling 1-3 tools, then the answer).

    .venv/bin/python bench/loop_overhead.py [--runs 400]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from baton.events import RecordingTracker
from baton.llm.testing import ScriptedModel
from baton.loop import LoopSettings, run_loop
from baton.messages import LLMResponse, Message, Tool, ToolCall, ToolParameter
from baton.tools import FunctionTool

TOOLS = 10
TURNS = 9  # tool turns per run; +1 final answer = 10 iterations


def make_tools() -> list[FunctionTool]:
    def make(i: int) -> FunctionTool:
        spec = Tool(
            f"tool_{i}",
            f"Looks up fact number {i} about the sales data for a region.",
            [ToolParameter("region", "string", "the region"), ToolParameter("limit", "integer", "rows", required=False)],
        )

        async def answer(region: str, limit: int = 10) -> str:
            return f"tool_{i}: region {region} has {limit * i} orders, revenue {1234.5 * i:.2f}"

        return FunctionTool(spec, answer)

    return [make(i) for i in range(TOOLS)]


def script(run: int) -> list[LLMResponse]:
    responses = []
    for turn in range(TURNS):
        width = 1 + (turn % 3)  # 1, 2 or 3 calls in the turn
        calls = [
            ToolCall(f"r{run}t{turn}c{k}", f"tool_{(turn + k) % TOOLS}", {"region": "north", "limit": 5})
            for k in range(width)
        ]
        responses.append(LLMResponse(content="", tool_calls=calls, usage={"input_tokens": 0, "output_tokens": 12}))
    responses.append(LLMResponse(content="North sold the most.", usage={"output_tokens": 5}))
    return responses


class BareModel:
    """A zero-latency ChatModel that hands back prepared responses without copying anything."""

    provider = "bench"
    model = "bare"

    def __init__(self, responses: list[LLMResponse]) -> None:
        self._responses = iter(responses)

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None) -> LLMResponse:
        return next(self._responses)

    async def stream(self, messages, tools=None, *, temperature=None, max_tokens=None):
        yield next(self._responses)  # not used


async def measure(label: str, make_model, runs: int, tracker_factory=None) -> None:
    tools = make_tools()
    question = [Message.system("You answer questions about sales data with the tools."), Message.user("Who sold most?")]
    settings = LoopSettings(max_iterations=TURNS + 1)
    models = [make_model(script(r)) for r in range(runs)]  # built outside the measurement
    trackers = [tracker_factory() if tracker_factory else None for _ in range(runs)]
    await run_loop(make_model(script(-1)), question, tools, context_window=128_000, settings=settings)  # warm-up
    iterations = 0
    start = time.process_time()
    for model, tracker in zip(models, trackers):
        kwargs = {"tracker": tracker} if tracker is not None else {}
        result = await run_loop(model, question, tools, context_window=128_000, settings=settings, **kwargs)
        iterations += result.iterations
    elapsed = time.process_time() - start
    assert result.content == "North sold the most." and result.iterations == TURNS + 1
    print(f"loop overhead: {elapsed / iterations * 1000:.3f} ms/iteration (target < 0.2 ms) "
          f"[{label}; {TOOLS} tools, {iterations} iterations]")


async def main(runs: int) -> None:
    await measure("ScriptedModel", ScriptedModel, runs)
    await measure("bare ChatModel", BareModel, runs)
    await measure("bare ChatModel + RecordingTracker", BareModel, runs, RecordingTracker)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    asyncio.run(main(parser.parse_args().runs))
