"""The orchestrator's own cost, and its throughput under concurrency.

1. CPU per routed question: pass-through, zero-latency FunctionModel and specialist, so all
   time measured is the framework's own (process CPU time, many questions, sequential).
2. Throughput: 500 concurrent conversations against a model with a fixed 200 ms latency.
   ideal = min(concurrency / (model round trips per question x 0.2 s), 1 / CPU per question)
   Target: at least 90 % of ideal (no collapse under concurrency).
3. Memory per idle conversation: what a finished conversation (history + answer) keeps.

Run: .venv/bin/python bench/orchestrator_overhead.py
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse, Message

UNITS = ["pokemon_finance", "epson_finance", "roadshows_finance", "general_finance"]
LATENCY = 0.2


def route(messages, tools):
    if messages[-1].role == "tool":
        return "done"
    unit = messages[-1].content.split(":")[0]
    return LLMResponse(tool_calls=[tool_call(unit, {"question": messages[-1].content})], usage={"input_tokens": 50, "output_tokens": 5})


async def slow_route(messages, tools):
    await asyncio.sleep(LATENCY)
    return route(messages, tools)


def orchestrator(model) -> OrchestratorAgent:
    o = OrchestratorAgent("FinanceOrchestrator", model=model)
    for unit in UNITS:
        o.add_agent(TableAgent(unit))
    return o


async def cpu_per_question(n: int = 3000) -> float:
    model = FunctionModel(route)
    o = orchestrator(model)
    for i in range(200):  # warm-up
        await o.ask(f"{UNITS[i % 4]}: warm {i}")
    calls_before = model.call_count
    start = time.process_time()
    for i in range(n):
        await o.ask(f"{UNITS[i % 4]}: question {i}")
    cpu = (time.process_time() - start) / n
    round_trips = (model.call_count - calls_before) / n
    print(f"framework CPU per routed question (pass-through, early exit): {cpu * 1000:.3f} ms  (target < 1 ms)")
    print(f"model round trips per question: {round_trips:.2f}")
    return cpu, round_trips


async def throughput(cpu: float, round_trips: float, concurrency: int = 500, questions_each: int = 10) -> None:
    o = orchestrator(FunctionModel(slow_route))

    async def conversation(c: int) -> None:
        history: list[Message] = []
        for q in range(questions_each):
            question = f"{UNITS[(c + q) % 4]}: conversation {c} question {q}"
            answer = await o.ask(question, chat_history=history)
            history += [Message.user(question), Message.assistant(answer.content)]

    start = time.perf_counter()
    await asyncio.gather(*(conversation(c) for c in range(concurrency)))
    wall = time.perf_counter() - start
    done = concurrency * questions_each
    measured = done / wall
    ideal = min(concurrency / (round_trips * LATENCY), 1 / cpu)
    print(f"throughput, {concurrency} concurrent conversations x {questions_each} questions, model latency {LATENCY * 1000:.0f} ms: "
          f"{measured:.0f} questions/s")
    print(f"ideal = min({concurrency} / ({round_trips:.2f} x {LATENCY}), 1 / {cpu * 1000:.3f} ms) = {ideal:.0f} questions/s")
    print(f"throughput / ideal: {measured / ideal * 100:.1f} %  (target >= 90 %)")


async def memory_per_conversation(n: int = 500) -> None:
    o = orchestrator(FunctionModel(route))
    await o.ask("pokemon_finance: warm")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = []
    for c in range(n):
        question = f"{UNITS[c % 4]}: conversation {c}"
        answer = await o.ask(question)
        kept.append(([Message.user(question), Message.assistant(answer.content)], answer))
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    print(f"memory per idle conversation (one turn: history + answer with a 1-row table): {grown / n / 1024:.1f} KiB")


async def main() -> None:
    cpu, round_trips = await cpu_per_question()
    await throughput(cpu, round_trips)
    await memory_per_conversation()


if __name__ == "__main__":
    asyncio.run(main())
