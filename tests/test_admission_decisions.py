"""Admission's decisions from measured headroom (``baton.server.admission``), fed readings of a
fake clock: no count limits a process with headroom; saturation (the loop's lag, its busy
share, a full bulkhead) refuses, with ``Retry-After`` from the drain rate; the limit learned
under saturation grows back while healthy; the memory cap follows the measured bytes per unit;
a key under its fair share is admitted when a heavy key is refused."""

from __future__ import annotations

import pytest

from baton.errors import ConfigurationError
from baton.server.admission import FAIR_RESERVE, STREAM, TICK_S, Admission, Overloaded
from baton.server.headroom import MIN_UNITS_FOR_MEMORY, Reading
from baton.server.limits import Limits


class FakeClock:
    """Readings one tick apart; ``lag`` seconds late, the loop ``busy`` that share of the time."""

    def __init__(self, admission: Admission, rss: int = 100 << 20) -> None:
        self.admission, self.wall, self.cpu, self.rss = admission, 0.0, 0.0, rss
        admission.headroom.start(Reading(0.0, 0.0, 0.0, rss), admission.finished)

    def tick(self, lag: float = 0.0, busy: float = 0.1, rss: int | None = None, n: int = 1, os_lag: float = 0.0) -> None:
        for _ in range(n):
            elapsed = TICK_S + lag
            self.wall += elapsed
            self.cpu += elapsed * busy
            self.admission.tick(Reading(self.wall, self.cpu, self.cpu, self.rss if rss is None else rss, os_lag))

    def saturate(self, lag: float = 0.2) -> None:
        """Late ticks of a busy loop (80 %: its own work, not the machine's other processes)
        until admission calls it saturated."""
        for _ in range(10):
            self.tick(lag=lag, busy=0.8)
            if self.admission.why is not None:
                return
        raise AssertionError("never saturated")


def admission(**limits) -> Admission:
    return Admission(Limits(**limits), measure=False)


def take_all(a: Admission, n: int, key: str = "a", cost: int = 1) -> list:
    return [a.take(key, cost) for _ in range(n)]


def test_with_headroom_thousands_are_admitted_whatever_the_count():
    """Questions waiting on a model cost almost nothing: no count stops them, only the cap."""
    a = admission(max_in_flight=5000)
    clock = FakeClock(a)
    tickets = take_all(a, 2000)
    clock.tick(n=20)  # a quiet loop: 10 % busy, on time
    tickets += take_all(a, 2000)
    assert a.in_flight == 4000 and a.refused == 0 and a.why is None


def test_a_late_loop_is_saturation_and_refuses_with_retry_after_from_the_drain_rate():
    a = admission()
    clock = FakeClock(a)
    tickets = take_all(a, 300)
    for ticket in tickets[:100]:  # 100 finished over the next tick: a drain of about 2,000/s
        ticket.release()
    clock.saturate()
    assert a.why is not None and "late" in a.why
    assert 0.9 * 200 <= a.limit < a.in_flight == 200  # no growth: gently under what is in flight
    with pytest.raises(Overloaded) as refused:
        a.take("a")
    assert refused.value.retry_after >= 1 and a.refused == 1 and a.refusals == {"cpu": 1}


def test_a_loop_late_by_the_machines_own_lateness_is_not_saturation():
    """Timers fire 200 ms late because the machine's other processes run first: an idle thread
    wakes as late (the sentinel), so refusing would change nothing; 200 ms beyond it would."""
    a = admission()
    clock = FakeClock(a)
    take_all(a, 100)
    clock.tick(lag=0.2, busy=0.3, os_lag=0.19, n=10)
    assert a.why is None and a.refusal("a") is None
    clock.tick(lag=0.4, busy=0.3, os_lag=0.19, n=10)
    assert a.why is not None and "late" in a.why


def test_questions_that_wait_long_on_their_model_bear_a_later_loop():
    """The lag bound follows what questions take (in flight over finished a second): 1,000
    questions finishing 100 a second take 10 s, and bear a loop 80 ms late (1 % of it is 100 ms)
    that would be saturation for questions of 200 ms; 300 ms late is saturation anyway."""
    a = admission()
    clock = FakeClock(a)
    tickets = take_all(a, 1000)
    for _ in range(60):  # 13 of them finish (and 13 more arrive) each tick (50 ms, 80 late): 100 a second
        for ticket in tickets[:13]:
            ticket.release()
        tickets = tickets[13:] + take_all(a, 13)
        clock.tick(lag=0.08, busy=0.4)
    assert 0.09 <= a.headroom.lag_bound(a.question_s()) <= 0.11
    assert a.why is None and a.refusal("a") is None and a.refused == 0
    clock.tick(lag=0.3, busy=0.4, n=10)
    assert a.why is not None and "late" in a.why
    quick = admission()
    clock = FakeClock(quick)
    tickets = take_all(quick, 20)
    for _ in range(40):  # 20 in flight, 100 finished a second: 200 ms each
        for ticket in tickets[:5]:
            ticket.release()
        tickets = tickets[5:] + take_all(quick, 5)
        clock.tick(lag=0.08, busy=0.4)
        if quick.why is not None:
            break
    assert quick.why is not None and "late" in quick.why


async def test_the_sentinel_measures_how_late_an_idle_thread_wakes():
    import asyncio

    from baton.server.headroom import Sentinel

    sentinel = Sentinel(0.01)
    sentinel.start()
    while sentinel.lag_s == 0.0:  # any oversleep at all (a real one is never exactly 0)
        await asyncio.sleep(0.01)
    sentinel.stop()
    assert sentinel.lag_s == 0.0 and sentinel._thread is None


def test_the_busy_share_alone_is_saturation():
    a = admission(admission_max_busy=0.9, admission_max_lag_s=0.05)
    clock = FakeClock(a)
    take_all(a, 50)
    clock.tick(busy=1.0, n=5)  # on time, but the interpreter never rests
    assert a.why is not None and "busy" in a.why
    assert a.refusal("a") is not None


def test_a_slow_retry_after_when_little_drains():
    a = admission()
    clock = FakeClock(a)
    take_all(a, 200)
    a.take("a").release()  # one finished in the tick: a drain of about 4/s
    clock.saturate(lag=0.3)
    refused = a.refusal("a")
    assert refused is not None and refused[1] > 1


def test_the_limit_grows_back_while_healthy_and_resets_at_rest():
    a = admission(max_in_flight=10_000)
    clock = FakeClock(a)
    tickets = take_all(a, 400)
    clock.saturate()
    low = a.limit
    assert low < 400 and a.refusal("a") is not None
    clock.tick(n=6)  # the lag falls back under its bound over a few ticks
    assert a.why is None
    clock.tick(n=20)  # healthy, and 400 in flight bind the limit: it grows back past them
    assert a.limit > 400 and a.refusal("a") is None
    for ticket in tickets[:-1]:
        ticket.release()
    a.settle(Reading(clock.wall, clock.cpu, clock.cpu, clock.rss))
    assert a.limit == 10_000 * (1 - FAIR_RESERVE)


def test_the_limit_grows_by_its_square_root_per_tick_while_it_binds_and_all_is_well():
    a = admission(max_in_flight=10_000)
    clock = FakeClock(a)
    take_all(a, 100)
    clock.saturate()
    while a.why is not None:
        clock.tick()
    limit = a.limit
    assert a.in_flight >= 0.9 * limit  # binding
    clock.tick()
    assert a.limit == limit + max(4.0, limit ** 0.5)


def test_the_memory_cap_follows_the_measured_bytes_per_unit():
    """1 MiB per unit measured over the idle RSS and a 256 MiB budget: a cap of 256 units."""
    a = admission(max_in_flight=10_000, admission_memory_bytes=256 << 20)
    idle = 100 << 20
    a.settle(Reading(0.0, 0.0, 0.0, idle))
    clock = FakeClock(a, rss=idle)
    take_all(a, MIN_UNITS_FOR_MEMORY * 2)
    clock.tick(rss=idle + MIN_UNITS_FOR_MEMORY * 2 * (1 << 20))
    assert a.memory_cap() == 256
    assert a.limit == 256 * (1 - FAIR_RESERVE)  # the adaptive limit stays under the cap
    take_all(a, int(a.limit) - a.in_flight)
    assert a.refusal("a") is not None
    take_all(a, 256 - a.in_flight, key="b")  # within its share, up to the cap
    refused = a.refusal("c")  # even a key within its share: the cap protects memory
    assert refused is not None and "cap" in refused[0]
    assert a.state()["memory_cap"] == 256


def test_the_hard_cap_refuses_every_key():
    a = admission(max_in_flight=10)
    take_all(a, 10)
    with pytest.raises(Overloaded, match="cap of 10"):
        a.take("b")


def test_a_full_bulkhead_is_saturation():
    load = [0.2]
    a = admission()
    a.watch("memory[w]", lambda: load[0])
    clock = FakeClock(a)
    take_all(a, 20)
    clock.tick()
    assert a.why is None
    load[0] = 0.95
    clock.tick()
    assert a.why == "memory[w]'s queue is full" and a.refusal("a") is not None


def test_one_question_alone_is_always_admitted():
    a = admission(max_in_flight=1)
    a.why = "the event loop runs 900 ms late: the CPU is saturated"
    ticket = a.take("a")
    ticket.release()
    ticket.release()  # once only
    assert a.in_flight == 0 and a.by_key == {}


def test_fairness_a_key_under_its_share_is_admitted_while_a_heavy_key_is_refused():
    """Key A at 900 in flight, key B at 10, saturated: B's next question is admitted (it holds
    less than its fair share, 455), A's is refused, and its Retry-After counts A's own drain."""
    a = admission()
    clock = FakeClock(a)
    heavy = take_all(a, 900, key="A")
    light = take_all(a, 10, key="B")
    clock.saturate()
    assert a.refusal("A") is not None and "this key holds 900" in a.refusal("A")[0]
    for _ in range(10):
        light.append(a.take("B"))
    assert a.by_key["B"] == 20
    assert a.refusal("C") is None  # a new key too
    assert len(heavy) == 900


def test_fairness_has_a_bound_keys_within_their_share_hold_at_most_the_limit():
    """Many new keys while saturated: each comes in within its share of the limit, and
    together they never pass the limit (the heavy key is refused meanwhile)."""
    a = admission()
    clock = FakeClock(a)
    take_all(a, 100, key="A")
    clock.saturate()
    admitted = 0
    for n in range(1000):
        if a.refusal(f"k{n}") is None:
            a.take(f"k{n}")
            admitted += 1
    assert 0 < admitted <= a.limit
    assert a.refusal("A") is not None


def test_a_stream_costs_more_than_a_question():
    a = admission(max_in_flight=5)
    a.take("a", STREAM)
    a.take("a", STREAM)
    assert a.in_flight == 4
    assert a.refusal("a", STREAM) is not None and a.refusal("a") is None


def test_the_fixed_count_settings_are_refused_by_name():
    with pytest.raises(ConfigurationError, match="BATON_ADMISSION_QUEUE is no longer used"):
        Limits.from_env({"BATON_ADMISSION_QUEUE": "4"})
    limits = Limits.from_env({"BATON_ADMISSION_MAX_LAG": "0.1", "BATON_HEADER_TIMEOUT": "5", "BATON_MAX_CONNECTIONS": "100"})
    assert (limits.admission_max_lag_s, limits.header_timeout_s, limits.max_connections) == (0.1, 5.0, 100)


async def test_a_burst_is_admitted_by_slow_start_not_all_before_the_first_measurement():
    """Questions arriving between two ticks: START are admitted at once, the rest wait for the
    next measurements (in flight may triple per tick) and, the process being idle otherwise,
    are all admitted within a few ticks; none refused."""
    import asyncio

    from baton.server.waiting import START, WAIT_TICKS

    a = Admission(Limits())
    first = a.take("a")
    burst = [asyncio.ensure_future(a.admit("a")) for _ in range(20 * START)]
    await asyncio.sleep(0)
    admitted_at_once = sum(t.done() for t in burst)
    waiting = a.waiting
    tickets = await asyncio.gather(*burst)
    assert admitted_at_once == START - 1 and waiting == 19 * START + 1  # the first took one of START
    assert len(tickets) == 20 * START and a.refused == 0 and a.in_flight == 20 * START + 1
    assert 20 * START <= START * 3 ** WAIT_TICKS  # within the waits: tripling per tick
    for ticket in [first, *tickets]:
        ticket.release()
    a.close()


async def test_a_key_under_its_share_does_not_queue_behind_another_keys_burst():
    import asyncio

    from baton.server.waiting import START

    a = Admission(Limits())
    first = a.take("A")
    burst = [asyncio.ensure_future(a.admit("A")) for _ in range(4 * START)]
    await asyncio.sleep(0)
    waiting = a.waiting
    assert waiting > 0  # A's burst waits for the measurements
    light = asyncio.ensure_future(a.admit("B"))
    await asyncio.sleep(0)
    assert light.done() and a.by_key["B"] == 1 and a.waiting == waiting  # B held nothing: admitted at once, before any tick
    for ticket in [first, light.result(), *await asyncio.gather(*burst)]:
        ticket.release()
    a.close()


async def test_a_streamed_slot_outside_the_guard_is_released_when_its_response_ends():
    a = admission()
    a.take("a")
    slot = await a.hold()
    assert a.in_flight == 1 + STREAM

    async def chunks():
        yield b"data: 1\n\n"

    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    response = slot.streaming(chunks(), media_type="text/event-stream")
    await response({"type": "http", "asgi": {"spec_version": "2.4"}}, receive, send)
    assert a.in_flight == 1 and sent[-1]["type"] == "http.response.body"


def test_retry_after_backs_off_while_refusals_outnumber_what_drains_and_is_jittered():
    """A thousand clients refused every second while ten questions a second finish: telling
    them all 1 s brings them back together to be refused again; the backoff grows until the
    refusals match the drain, and the values given spread over [backoff, 2 x backoff)."""
    from baton.server.admission import MAX_RETRY_AFTER_S

    a = admission()
    clock = FakeClock(a)
    tickets = take_all(a, 100)
    clock.saturate()
    for n in range(40):  # 2 s: 50 refusals a tick (1,000/s), half a question finished a tick (10/s)
        for _ in range(50):
            assert a.refusal("a") is not None
            a.count_refusal("the CPU is saturated")
        if n % 2:
            tickets.pop().release()
        clock.tick(lag=0.3, busy=0.8)  # later than any question bears (``MAX_LAG_BOUND``)
    assert a.backoff > 2
    a.headroom.drain_per_s = 1000.0  # what is over the limit drains at once: the backoff alone decides
    given = {a.refusal("a")[1] for _ in range(200)}
    assert min(given) >= int(a.backoff) and len(given) > 1 and max(given) <= MAX_RETRY_AFTER_S


async def test_at_the_limit_a_released_slot_goes_to_the_first_in_line_not_to_whoever_asks_next():
    """A slow question waiting at the limit gets the slot a fast one frees, though the fast
    client asks again at once; a question that finds no slot within the line's wait is refused."""
    import asyncio

    a = admission()
    fast = take_all(a, 10)
    a.limit = 10.0
    slow = asyncio.ensure_future(a.admit("a"))
    await asyncio.sleep(0)
    assert not slow.done() and len(a._line) == 1
    fast.pop().release()  # a fast question ends, and its client asks again at once
    again = asyncio.ensure_future(a.admit("a"))
    for _ in range(20):  # a few turns of the loop for the handed slot to reach its waiter (no time passes)
        await asyncio.sleep(0)
    assert slow.done() and slow.result().cost == 1  # the slot went to the one in line
    assert not again.done()  # the fast client waits its turn
    with pytest.raises(Overloaded, match="no slot within"):
        await again  # nothing else ends within the wait
    assert a.in_flight == 10 and not a._line and a._handed == 0


async def test_the_line_waits_longer_for_questions_that_take_longer():
    """A twentieth of what a question takes now (in flight over finished a second, before any
    answer's time is known), between 50 ms and 1 s: questions waiting 20 s on their model wait up to a second for a slot rather than
    be refused after 0.1 s and come back after a Retry-After of seconds."""
    import asyncio

    from baton.server.waiting import LINE_WAIT_S, MAX_LINE_WAIT_S

    a = admission()
    held = take_all(a, 10)
    a.limit = 10.0
    assert a.line_wait_s() == LINE_WAIT_S  # nothing finished yet: how long questions take is unknown
    a.headroom.drain_per_s = 0.5  # 10 in flight, 1 finishing every 2 s: 20 s each
    assert a.line_wait_s() == MAX_LINE_WAIT_S
    waiting = asyncio.ensure_future(a.admit("a"))
    await asyncio.sleep(0.3)  # longer than the shortest wait
    assert not waiting.done()
    held.pop().release()
    ticket = await asyncio.wait_for(waiting, 1)
    assert ticket.cost == 1 and a.refused == 0
    a.headroom.drain_per_s = 1000.0  # 1 ms each: the shortest wait
    assert a.line_wait_s() == LINE_WAIT_S


async def test_a_light_key_skips_the_line_a_heavy_key_waits_in():
    import asyncio

    a = admission()
    heavy = take_all(a, 10, key="A")
    a.limit = 10.0
    waiting = asyncio.ensure_future(a.admit("A"))
    await asyncio.sleep(0)
    assert not waiting.done() and a._line
    light = await a.admit("B")  # B holds nothing: within its share, not behind A's line
    assert light.key == "B" and not waiting.done()
    heavy.pop().release()
    heavy.pop().release()  # B took one more than the limit: two must end for A's next
    assert (await waiting).key == "A"


def test_memory_per_unit_is_what_the_process_grew_by_at_its_peak():
    """Resident memory seldom shrinks: after a peak of 200 units, 100 MiB grown is 0.5 MiB a
    unit, not 1 MiB a unit once half have finished."""
    a = admission(max_in_flight=10_000, admission_memory_bytes=1 << 30)
    idle = 100 << 20
    a.settle(Reading(0.0, 0.0, 0.0, idle))
    clock = FakeClock(a, rss=idle)
    tickets = take_all(a, 200)
    clock.tick(rss=idle + (100 << 20))
    for ticket in tickets[:100]:
        ticket.release()
    clock.tick(rss=idle + (100 << 20), n=10)
    assert a.headroom.bytes_per_unit == (100 << 20) / 200


async def test_the_line_moves_when_the_limit_grows_not_only_when_questions_end():
    """Long questions (open streams) end rarely: when the limit grows, those in line get the
    room at the tick rather than wait out the line and be refused."""
    import asyncio

    a = admission()
    clock = FakeClock(a)
    take_all(a, 10)
    a.limit = 10.0
    waiting = [asyncio.ensure_future(a.admit("a")) for _ in range(3)]
    await asyncio.sleep(0)
    assert len(a._line) == 3
    clock.tick()  # healthy and binding: the limit grows past 13
    tickets = await asyncio.gather(*waiting)
    assert a.limit >= 13 and len(tickets) == 3 and a.in_flight == 13 and a.refused == 0
