"""The delay this process adds to its answers, as admission's third sign of saturation
(``baton.server.delays``), and the dependency waits it is measured against
(``baton.dependency_waits``): the real SDKs' calls against a local stub, a bulkhead's
threads, a group commit. Durations are compared with each other (a wait inside a span is
at most the span), never with a clock budget."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.dependency_waits import stop_tracking, timed_in_thread, track, waiting_on_dependency
from baton.llm import Anthropic, FunctionModel, OpenAICompatible, tool_call
from baton.messages import LLMResponse, Message
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.server.admission import TICK_S, Admission, Overloaded
from baton.server.delays import FLOOR_S, MIN_ANSWERS, WINDOW_S, OwnDelays
from baton.server.headroom import Reading
from baton.server.limits import Limits
from baton.state.bulkheads import Bulkhead
from baton.state.group_commit import GroupCommit
from stub_llm_server import Reply, anthropic_text, openai_stream_text, openai_text, running_stub

# --- the signal -------------------------------------------------------------------------------


def test_a_mix_of_instant_and_slow_model_answers_is_not_saturation():
    """2 ms verified answers beside 10 s model answers, each adding a few ms of its own:
    the model's latency is not this process's delay (a limiter on latency alone would throttle)."""
    delays = OwnDelays()
    for n in range(100):
        delays.answered(10.0, 0.002, 0.0) if n % 2 else delays.answered(10.0, 10.004, 10.0)
    assert delays.saturated(10.0, busy=0.95) is None


def test_own_delay_beyond_what_the_answer_bears_is_saturation():
    delays = OwnDelays()
    for _ in range(MIN_ANSWERS):
        delays.answered(5.0, 2.4, 2.0)  # 400 ms of its own beside a 2 s model call
    why = delays.saturated(5.0, busy=0.9)
    assert why is not None and "400 ms beyond their model and stores" in why and "CPU is saturated" in why


def test_a_quiet_interpreter_too_few_answers_or_old_ones_say_nothing():
    delays = OwnDelays()
    for _ in range(MIN_ANSWERS - 1):
        delays.answered(1.0, 1.0, 0.0)
    assert delays.saturated(1.0, busy=0.9) is None  # too few to say
    delays.answered(1.0, 1.0, 0.0)
    assert delays.saturated(1.0, busy=0.9) is not None
    assert delays.saturated(1.0, busy=0.1) is None  # slow on its own, with nothing else running: not saturation
    assert delays.saturated(1.0 + WINDOW_S + 0.01, busy=0.9) is None  # the window moved past them


def test_the_operator_sets_the_delay_an_answer_may_bear():
    assert Limits.from_env({"BATON_ADMISSION_MAX_DELAY": "0.2"}).admission_max_delay_s == 0.2
    lenient = Admission(Limits(admission_max_delay_s=0.5), measure=False).delays
    for _ in range(MIN_ANSWERS):
        lenient.answered(1.0, 0.4, 0.0)  # 400 ms of its own: over the default 75 ms, under 0.5 s
    assert lenient.saturated(1.0, busy=0.9) is None


def test_the_floor_lets_short_answers_keep_their_own_few_milliseconds():
    delays = OwnDelays()
    for _ in range(50):
        delays.answered(0.0, FLOOR_S * 0.9, 0.0)
    assert delays.saturated(0.0, busy=1.0) is None


def test_admission_refuses_while_delays_say_saturated_and_admits_again_after():
    a = Admission(Limits(), measure=False)
    wall = cpu = 0.0
    a.headroom.start(Reading(0.0, 0.0, 0.0, 100 << 20), a.finished)
    held = [a.take("a") for _ in range(40)]

    def tick(busy: float) -> None:
        nonlocal wall, cpu
        wall += TICK_S
        cpu += TICK_S * busy
        a.tick(Reading(wall, cpu, cpu, 100 << 20))

    for _ in range(4):
        tick(0.7)  # on time, 70 % busy: the loop's lag and busy share alone see headroom
    assert a.why is None
    for ticket in held[:20]:
        a.answered(2.5, 2.0, at=wall)  # half a second of their own beside a 2 s model call
        ticket.release()
    tick(0.7)
    assert a.why is not None and "beyond their model" in a.why
    with pytest.raises(Overloaded) as refused:
        a.take("a")
    assert refused.value.retry_after >= 1
    for _ in range(int(WINDOW_S / TICK_S) + 2):
        tick(0.7)  # the slow answers leave the window; nothing says saturated any more
    assert a.why is None
    a.take("a")


def test_what_a_question_takes_is_its_answers_time_not_littles_law():
    """While refusals cut the drain, in flight over finished a second swells (a 1 s line wait
    was measured for questions of 2 s): the answers' own times say what a question takes."""
    a = Admission(Limits(), measure=False)
    held = [a.take("a") for _ in range(300)]
    a.headroom.drain_per_s = 30.0  # 300 in flight, 30 finishing a second: 10 s by Little's law
    assert a.question_s() == pytest.approx(10.0)
    for _ in range(20):
        a.answered(2.0, 1.9)
    assert a.question_s() == pytest.approx(2.0) and a.line_wait_s() == pytest.approx(0.1)
    for ticket in held:
        ticket.release()


def test_the_typical_answer_time_follows_a_new_workload_without_a_sort_per_answer():
    """The median is taken again once an eighth of the answers it ranks are new: a workload
    that changed shows within 32 answers at 256 kept, and the first answers count at once."""
    delays = OwnDelays()
    delays.answered(0.0, 1.0, 0.9)
    assert delays.typical_s() == 1.0
    for _ in range(255):
        delays.answered(0.0, 1.0, 0.9)
    assert delays.typical_s() == 1.0
    changed = 0
    while delays.typical_s() != 3.0:
        delays.answered(0.0, 3.0, 2.9)
        changed += 1
        assert changed <= 128 + 32, "the typical time did not follow answers that tripled"
    assert 128 <= changed <= 128 + 32  # the median moves once half the kept answers are new, seen within 32 more


# --- what is a dependency's time ----------------------------------------------------------------


@pytest.fixture
def stub():
    with running_stub() as server:
        yield server


async def test_a_real_sdk_call_counts_as_waited(stub):
    stub.script("openai", _delayed(openai_text("hi"), 0.3))
    model = OpenAICompatible("stub-model", api_key="k", base_url=stub.openai_base_url, timeout=5.0)
    waits, token = track()
    started = time.perf_counter()
    try:
        await model.complete([Message.user("q")])
    finally:
        stop_tracking(token)
        await model.aclose()
    assert 0.3 <= waits.seconds <= time.perf_counter() - started


async def test_an_anthropic_call_counts_as_waited(stub):
    stub.script("anthropic", _delayed(anthropic_text("hi"), 0.2))
    model = Anthropic("claude-stub", api_key="k", base_url=stub.base_url, timeout=5.0)
    waits, token = track()
    try:
        await model.complete([Message.user("q")])
    finally:
        stop_tracking(token)
        await model.aclose()
    assert waits.seconds >= 0.2


async def test_a_stream_counts_its_chunks_waits_not_what_its_reader_does_between_them(stub):
    stub.script("openai", openai_stream_text(["a", "b", "c"]))
    model = OpenAICompatible("stub-model", api_key="k", base_url=stub.openai_base_url, timeout=5.0)
    waits, token = track()
    started = time.perf_counter()
    reading = 0.0
    try:
        async for _ in model.stream([Message.user("q")]):
            pause = time.perf_counter()
            await asyncio.sleep(0.1)  # the reader's own work between chunks
            reading += time.perf_counter() - pause
    finally:
        stop_tracking(token)
        await model.aclose()
    assert reading >= 0.3 and waits.seconds > 0
    assert waits.seconds <= time.perf_counter() - started - reading


async def test_overlapping_waits_count_once():
    """Two specialists asked at once: the request waited while either was out, not twice."""
    waits, token = track()
    try:
        started = time.perf_counter()
        with waiting_on_dependency():
            with waiting_on_dependency():
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.05)
        span = time.perf_counter() - started
    finally:
        stop_tracking(token)
    assert 0.1 <= waits.seconds <= span  # counted twice, the inner wait would push it past the span


async def test_a_threads_run_counts_but_its_queue_does_not():
    bulkhead = Bulkhead("one", threads=1, queue=4, timeout_s=5.0)
    ended: list[float] = []
    gate = threading.Event()

    def work() -> None:
        gate.wait(0.2)
        ended.append(time.perf_counter())

    first = asyncio.ensure_future(bulkhead.run(work))
    await asyncio.sleep(0)
    waits, token = track()
    started = time.perf_counter()
    try:
        await bulkhead.run(work)  # queued behind the first on the one thread
    finally:
        stop_tracking(token)
    span = time.perf_counter() - started
    await first
    bulkhead.close()
    queued = ended[0] - started  # the one thread ran the first call meanwhile: this one could not start
    assert queued > 0.1 and waits.seconds > 0
    assert waits.seconds <= span - queued  # its queue was not counted as a wait


async def test_nothing_is_kept_outside_a_request():
    def fn() -> int:
        return 1

    assert timed_in_thread(fn) is fn
    with waiting_on_dependency():
        await asyncio.sleep(0)


async def test_a_group_commit_is_no_one_requests_wait():
    """The first question to submit starts the drain task; the group's commit must not be
    counted as its wait (nor its later groups' commits)."""
    bulkhead = Bulkhead("commits", threads=1, queue=4, timeout_s=5.0)

    def write(group: list[int]) -> list[int]:
        time.sleep(0.05)
        return group

    commits: GroupCommit[int, int] = GroupCommit(lambda group: bulkhead.run(write, group))
    waits, token = track()
    try:
        assert await commits.submit(1) == 1
    finally:
        stop_tracking(token)
    bulkhead.close()
    assert waits.seconds == 0.0


async def test_the_server_scores_a_question_by_its_own_delay_not_its_models():
    """Over HTTP: a question whose model (an async function: a model's stand-in) waits 0.3 s
    is recorded by the request guard with that wait, so its own delay is the rest; streamed
    answers (the event stream, a streamed chat completion) are not recorded."""
    async def route(messages, tools):
        await asyncio.sleep(0.3)
        return "done" if messages[-1].role == "tool" else LLMResponse(tool_calls=[tool_call("units", {"question": "q"})])

    orchestrator = OrchestratorAgent("o", model=FunctionModel(route))
    orchestrator.add_agent(TableAgent("units"))
    app = create_app(Workspaces([Workspace("w", orchestrator, SessionStore())]), ApiKeys({"k": "w"}), limits=Limits())
    recorded: list[tuple[float, float]] = []
    admission = app.state.admission
    admission.answered = lambda total_s, waited_s, at=None: recorded.append((total_s, waited_s))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=60) as client:
        started = time.perf_counter()
        reply = await client.post("/v1/ask", json={"question": "q"}, headers={"Authorization": "Bearer k"})
        span = time.perf_counter() - started
        streamed = await client.post("/v1/ask/stream", json={"question": "q"}, headers={"Authorization": "Bearer k"})
        chat = {"model": "o", "messages": [{"role": "user", "content": "q"}]}
        chat_streamed = await client.post("/v1/chat/completions", json={**chat, "stream": True}, headers={"Authorization": "Bearer k"})
        assert len(recorded) == 1  # neither stream is scored: a stream's life is its reader's pace
        chat_whole = await client.post("/v1/chat/completions", json=chat, headers={"Authorization": "Bearer k"})
    assert [r.status_code for r in (reply, streamed, chat_streamed, chat_whole)] == [200] * 4
    assert "data:" in chat_streamed.text and len(recorded) == 2
    total, waited = recorded[0]
    assert 0.3 <= waited <= total <= span  # the routing model's call: the specialist's answer passes through


def _delayed(reply: Reply, seconds: float) -> Reply:
    reply.delay = seconds
    return reply
