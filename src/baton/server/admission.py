"""Admission control: a process takes a question while it has headroom, and refuses it at
once (503, ``Retry-After``, ``error_code: overloaded``) when it has none.

Headroom is measured (``headroom.py``), not counted: every ``TICK_S`` while two or more
questions are in flight, the event loop's lag (how late a timer fires, less how late the
machine wakes an idle thread: the delay Baton's own queued work adds to every step of every
answer) and the interpreter's busy share (the loop's thread and the threads sharing its
interpreter lock). Over ``max_busy``, or a lag over what the questions in flight can bear
(``Headroom.lag_bound``: ``max_lag_s``, more for questions that wait long on a model), the
CPU is saturated; so it is when the admitted questions' own delays (beyond their model's and
stores' time) run over what they may bear (``delays.py``). A bulkhead
whose queue is nearly full (``watch``) is saturation too: the questions admitted would
wait for it.

What we took from proven adaptive limiters, and what we did not:

- Netflix's concurrency-limits (Gradient2, AIMD) and Envoy's adaptive concurrency keep a
  *concurrency limit* that grows additively while things are healthy (Gradient2 adds
  about the limit's square root as headroom) and shrinks multiplicatively when they are
  not, by a gradient: long-term over short-term latency (Envoy: a measured minimum RTT
  over the sampled one), clamped. We keep the growth: ``limit`` grows by ``sqrt(limit)``
  per healthy tick while it binds; the limit remembers how much this process carried, so
  that the gate does not open to a burst the moment the lag falls back under its bound.
  The decrease we take gently: a saturated tick sets the limit to 95 % of what is in
  flight (``SATURATED_DECREASE``; 64 % less after a second of saturation), and nothing new
  beyond it is admitted (the allowance is 0); a slot freed meanwhile goes to the first in
  line. A question in flight here mostly waits on its model and costs nothing meanwhile;
  cutting the limit far under it (we did, by the lag's gradient, 0.5-0.9 a tick) only
  refused more, and the refusals were then the load (measured: 5,000 streams opening at
  42/s, the limit fell to 776 and 27,733 refusals kept the process saturated).
- Their signal is each request's latency. Ours is not that alone: a question's latency here
  is mostly the model's, and the model's latency is not this process's load. A 10 s model
  answer would read as an overloaded server, a 2 ms verified answer as an idle one, and a
  mix of both (the normal case) would make a latency gradient swing with the mix, not the
  load. Envoy's minimum-RTT probe (pinning concurrency low for a while) would refuse real
  users to measure a model's speed. So the signals here are the loop's lag and busy
  share, and each answer's latency *less what it waited on its model and stores*
  (``delays.py``): the delay and CPU that *this process* adds, whatever the model does. A question
  waiting on its model costs almost nothing while it waits, so thousands may be in flight.

A hard cap protects memory: ``max_in_flight`` units, and ``memory_bytes`` over the
measured resident memory per unit in flight (``Headroom.bytes_per_unit``: what RSS grew
by since the process rested, over the most units in flight since, once
``MIN_UNITS_FOR_MEMORY`` were), whichever is smaller. The adaptive limit stays ``FAIR_RESERVE`` under it.

Fairness: a question counts for its caller's key (``CALLER``, set by ``RequestGuard``
from the key or login cookie presented, before any parsing). At the limit or saturated,
a key is still admitted within its fair share of the limit (the limit over the keys with
work in flight, itself included: max-min fairness), and refused past it. So one key at
concurrency 900 cannot crowd out a key at 10: the heavy key is refused until its share
drains, the light one is served meanwhile. Those admissions are bounded: together the
keys within their share hold at most the limit (and never more than the memory cap).

What a question costs is counted in units: ``QUESTION`` (1), an open stream ``STREAM`` (2: it holds its connection, buffers,
tasks and event queue for its whole life; ``bench/server_throughput.py`` measured about
96 KiB of resident memory per open stream, 61 KiB since (``slots.py``, ``connections.py``, ``guard.py``),
against 47-65 KiB per question in flight), a
pipeline start ``PIPELINE`` (2: it plans with a model, then its run's stages).

Bursts and a full limit wait a little instead (``waiting.py``: slow start, and a line at
the limit).

``Retry-After`` comes from the measured drain rate: how long, at the units finished per
second lately, until what is over the limit has finished, and at least ``backoff``: the
clients refused lately (refusals per second x their wait) over the drain rate, so that a
thousand clients refused at once do not come back in the same second to be refused again
(measured: at 2 s x c=1,000 on a starved process, the 1 s retries' refusals kept it
saturated by themselves); jittered up to twice that; 1 s at least, ``MAX_RETRY_AFTER_S``
at most. One question alone is always admitted, and a process that has had at most one
in flight for a second (``QUIET_TICKS``) measures nothing until a second comes.

A saturated process refuses many questions a second, so a refusal costs next to nothing:
``RequestGuard`` takes the ticket (``admit``) before the question is parsed, its key checked
or its route run, and answers the 503 itself; the routes' own ``slot()`` / ``hold()`` then
find the guard's ticket (``HELD``) and take nothing more. Defaults in ``limits.py``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn

from baton.errors import BatonError
from baton.server.delays import OwnDelays
from baton.server.headroom import Headroom, Reading, Sentinel, busy_share
from baton.server.limits import Limits
from baton.server.slots import Slot
from baton.server.waiting import START, Waiting

__all__ = ["CALLER", "HELD", "Admission", "Overloaded", "Slot", "Ticket", "busy_share"]

log = logging.getLogger("baton.server.admission")
RETRY_AFTER_S = 1
MAX_RETRY_AFTER_S = 10
TICK_S = 0.05
QUIET_TICKS = 20  # measuring stops after this many ticks with at most one question in flight (1 s)
MIN_LIMIT = 8.0  # the adaptive limit never falls under this many units
SATURATED_DECREASE = 0.95  # a saturated tick sets the limit to this share of what is in flight
FAIR_RESERVE = 0.1  # the adaptive limit stays this share under the memory cap: room for keys within their share
PRESSURE = 0.9  # a bulkhead this full (running + queued over its bound) is saturation
MEMORY_WARNING_S = 60.0
QUESTION, STREAM, PIPELINE = 1, 2, 2
OVERLOADED = "the server is answering as many questions as it can; try again shortly"

CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("baton_admission_caller", default=None)


class Overloaded(BatonError):
    """No headroom for this question now; try again after ``retry_after`` seconds."""

    retry_after = RETRY_AFTER_S

    def __init__(self, message: str, retry_after: int = RETRY_AFTER_S) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Ticket:
    """Units admitted for one request, held by one key until released (once)."""

    __slots__ = ("admission", "cost", "key", "released")

    def __init__(self, admission: Admission, key: str, cost: int) -> None:
        self.admission, self.key, self.cost, self.released = admission, key, cost, False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.admission._release(self)


HELD: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar("baton_admission_held", default=None)


class Admission(Waiting):
    def __init__(self, limits: Limits | None = None, *, measure: bool = True) -> None:
        limits = limits or Limits()
        self.cap = limits.max_in_flight
        self.memory_bytes = limits.admission_memory_bytes
        self.headroom = Headroom(limits.admission_max_busy, limits.admission_max_lag_s)
        self.delays = OwnDelays(limits.admission_max_delay_s)
        self.measure = measure
        self.limit = float(self.cap)
        self.in_flight = 0  # units
        self.tickets = 0
        self.by_key: dict[str, int] = {}
        self.admitted = self.refused = self.finished = 0
        self.refusals: dict[str, int] = {}
        self.last_refusal = ""
        self.why: str | None = None  # saturated at the last tick, and why
        self.allowance = float(START)  # units that may still be admitted before the next tick
        self.refused_per_s = 0.0
        self.backoff = 1.0  # the least Retry-After now (``_retry_after``)
        self._line: collections.deque[asyncio.Future[None]] = collections.deque()  # questions waiting for a slot, in order
        self._handed = 0  # slots handed to the line, not yet taken
        self._refused_at_tick = 0
        self.waiting = 0
        self._ticked: asyncio.Event | None = None
        self._loads: list[tuple[str, Callable[[], float]]] = []
        self._watch: asyncio.Task | None = None
        self.sentinel = Sentinel(TICK_S)
        self._warned_at = -MEMORY_WARNING_S

    # --- the decision ----------------------------------------------------------------------------

    def watch(self, name: str, load: Callable[[], float]) -> None:
        """Count ``load()`` (0-1: a bulkhead's running and queued calls over its bound) as
        saturation when over ``PRESSURE``."""
        self._loads.append((name, load))

    def memory_cap(self) -> int:
        """The hard cap: ``max_in_flight``, and the memory budget over the measured bytes per unit."""
        if not self.headroom.measured_memory or self.headroom.bytes_per_unit <= 0:
            return self.cap
        return max(int(MIN_LIMIT), min(self.cap, int(self.memory_bytes / self.headroom.bytes_per_unit)))

    def question_s(self) -> float:
        """How long a question takes now: the median of the last answers' times (``delays.py``),
        or by Little's law before any (``Headroom.question_s``)."""
        return self.delays.typical_s() or self.headroom.question_s(self.in_flight)

    def refusal(self, key: str | None = None, cost: int = QUESTION) -> tuple[str, int] | None:
        """Why a request of ``key`` costing ``cost`` units would be refused now, and its
        ``Retry-After``; None when it would be admitted (module docstring)."""
        if not self.in_flight:
            return None  # one alone is always admitted
        after = self.in_flight + cost
        cap = self.memory_cap()
        if after > cap:
            self._warn_memory(cap)
            return f"{self.in_flight} units in flight, at the cap of {cap}", self._retry_after(after - cap)
        if after <= self.limit and self.why is None:
            return None
        held = self.by_key.get(key or "", 0)
        keys = len(self.by_key) + (held == 0)
        fair = self.limit / keys
        if held + cost <= fair:
            return None  # within its fair share of the limit: a key is not crowded out by another
        why = self.why or f"{self.in_flight} units in flight, at the adaptive limit of {self.limit:.0f}"
        if keys > 1:
            share = max(1e-6, held / self.in_flight)
            return f"{why}; this key holds {held} of them", self._retry_after(held + cost - fair, share)
        return why, self._retry_after(max(cost, after - self.limit))

    def _retry_after(self, excess: float, share: float = 1.0) -> int:
        """Seconds until ``excess`` units have drained (at the key's ``share`` of the drain
        rate), and at least ``backoff`` (the refused clients' own queue), with jitter so that
        those refused together do not all come back in the same second."""
        drain = self.headroom.drain_per_s * share
        wait = math.ceil(excess / drain) if drain > 0 else RETRY_AFTER_S
        wait = max(wait, math.ceil(self.backoff))
        if self.backoff > 1.0:
            wait += random.randrange(math.ceil(self.backoff))
        return int(min(MAX_RETRY_AFTER_S, max(RETRY_AFTER_S, wait)))

    def _refuse(self, why: str, cost: int) -> NoReturn:
        self.count_refusal(why)
        raise Overloaded(why, self._retry_after(cost))

    def take(self, key: str | None = None, cost: int = QUESTION) -> Ticket:
        """Admit ``cost`` units for ``key`` now (``Overloaded`` when refused); ``Ticket.release`` gives them back."""
        refused = self.refusal(key, cost)
        if refused is not None:
            self.count_refusal(refused[0])
            raise Overloaded(refused[0], refused[1])
        name = key or ""
        self.allowance -= cost
        self.in_flight += cost
        self.tickets += 1
        self.by_key[name] = self.by_key.get(name, 0) + cost
        self.admitted += 1
        if self.tickets >= 2:
            self._watch_headroom()
        return Ticket(self, name, cost)

    def answered(self, total_s: float, waited_s: float, at: float | None = None) -> None:
        """An admitted question answered (at ``at``, monotonic: now) ``total_s`` after its
        admission, ``waited_s`` of it on its dependencies (``delays.py``)."""
        self.delays.answered(time.monotonic() if at is None else at, total_s, waited_s)

    def count_refusal(self, why: str) -> None:
        self.refused += 1
        self.last_refusal = why
        kind = "memory" if "cap" in why else "share" if "this key" in why else "cpu" if "CPU" in why else "limit"
        self.refusals[kind] = self.refusals.get(kind, 0) + 1

    def _release(self, ticket: Ticket) -> None:
        self.in_flight -= ticket.cost
        self.tickets -= 1
        self.finished += ticket.cost
        left = self.by_key.get(ticket.key, 0) - ticket.cost
        if left > 0:
            self.by_key[ticket.key] = left
        else:
            self.by_key.pop(ticket.key, None)
        if self._line:
            self._hand_on()  # the slot goes to the first in line, not to whoever asks next

    def _warn_memory(self, cap: int) -> None:
        now = time.monotonic()
        if now - self._warned_at >= MEMORY_WARNING_S:
            self._warned_at = now
            log.warning("refused questions at the memory cap: %d units in flight, %.0f KiB each (measured: %s); "
                        "BATON_ADMISSION_MEMORY / BATON_MAX_IN_FLIGHT set it", self.in_flight,
                        self.headroom.bytes_per_unit / 1024, self.headroom.measured_memory)

    # --- measuring -------------------------------------------------------------------------------

    def _watch_headroom(self) -> None:
        if not self.measure:
            return
        if self._watch is None or self._watch.done() or self._watch.get_loop() is not asyncio.get_running_loop():
            self._watch = asyncio.get_running_loop().create_task(self._measure())

    async def _measure(self) -> None:
        self.sentinel.start()
        self.headroom.start(Reading.now(), self.finished)
        self._refused_at_tick = self.refused
        quiet = 0
        try:
            while True:
                await asyncio.sleep(TICK_S)
                reading = Reading.now(self.sentinel.lag_s)
                quiet = quiet + 1 if self.tickets <= 1 else 0
                if quiet >= QUIET_TICKS:
                    self.settle(reading)
                    return  # one question alone is always admitted: stop measuring until a second comes
                self.tick(reading)  # through short gaps too: CPU-bound questions queue before admission, not in it
        finally:
            self.sentinel.stop()

    def tick(self, reading: Reading, expected_s: float = TICK_S) -> None:
        """One measurement: the headroom, then the limit (module docstring)."""
        self.headroom.observe(reading, expected_s, self.in_flight, self.finished)
        refused, self._refused_at_tick = self.refused - self._refused_at_tick, self.refused
        self.refused_per_s = 0.8 * self.refused_per_s + 0.2 * refused / expected_s
        # refused clients come back after ``backoff``: about refused_per_s x backoff of them wait; they fit when that
        # many have drained. At the fixed point the refusals per second match the drain (multiplicative, smoothed)
        target = self.refused_per_s * self.backoff / max(1.0, self.headroom.drain_per_s)
        self.backoff = min(float(MAX_RETRY_AFTER_S) / 2, max(1.0, 0.9 * self.backoff + 0.1 * target))
        why = self.headroom.saturated(self.question_s()) or self.delays.saturated(reading.wall, self.headroom.busy)
        for name, load in self._loads:
            if why is None and load() >= PRESSURE:
                why = f"{name}'s queue is full"
        if (why is None) != (self.why is None):
            log.info("admission: %s (%d units in flight, limit %.0f, lag %.0f ms, busy %.0f%%)", why or "headroom again",
                     self.in_flight, self.limit, self.headroom.lag_s * 1000, self.headroom.busy * 100)
        self.why = why
        top = self.memory_cap() * (1 - FAIR_RESERVE)
        if why is not None:  # no growth, and gently under what is in flight now (module docstring)
            self.limit = max(MIN_LIMIT, min(self.limit, self.in_flight) * SATURATED_DECREASE)
        elif self.in_flight >= 0.9 * self.limit:
            self.limit += max(4.0, math.sqrt(self.limit))
        self.limit = min(self.limit, top)
        self.allowance = max(float(START), 2.0 * self.in_flight) if why is None else 0.0  # in flight may triple by the next tick
        while self._line and self.in_flight + self._handed < self.limit:
            self._hand_on()  # the limit grew (or questions ended unseen): the line moves up to it
        ticked, self._ticked = self._ticked, None
        if ticked is not None:
            ticked.set()  # the questions waiting on this measurement decide again, in order

    def settle(self, reading: Reading) -> None:
        """At most one question in flight: at rest. The limit returns to the cap."""
        self.headroom.idle(reading)
        self.delays.clear()
        self.why = None
        self.limit = self.memory_cap() * (1 - FAIR_RESERVE)
        self.allowance = float(START)
        self.refused_per_s, self.backoff, self._refused_at_tick = 0.0, 1.0, self.refused
        ticked, self._ticked = self._ticked, None
        if ticked is not None:
            ticked.set()

    def close(self) -> None:
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()
        self.sentinel.stop()

    # --- slots -----------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def slot(self, cost: int = QUESTION) -> AsyncIterator[None]:
        """Hold ``cost`` units while answering (``Overloaded`` when refused); nothing more when
        ``RequestGuard`` already holds this request's ticket."""
        if HELD.get() is not None:
            yield
            return
        ticket = await self.admit(CALLER.get(), cost)
        try:
            yield
        finally:
            ticket.release()

    async def hold(self, cost: int = STREAM) -> Slot:
        """Units for a streamed answer (``Slot.streaming`` releases them when the stream ends);
        the guard's ticket, raised to ``cost``, when it holds one."""
        held = HELD.get()
        if held is not None:
            if held.cost < cost and not held.released:
                extra = cost - held.cost
                held.cost = cost
                self.in_flight += extra
                self.by_key[held.key] = self.by_key.get(held.key, 0) + extra
            return Slot(None)
        return Slot(await self.admit(CALLER.get(), cost))

    def state(self) -> dict[str, Any]:
        headroom = self.headroom
        return {"in_flight": self.in_flight, "questions": self.tickets, "max_in_flight": self.cap, "memory_cap": self.memory_cap(),
                "limit": round(self.limit), "waiting": self.waiting + len(self._line), "keys": len(self.by_key), "admitted": self.admitted, "refused": self.refused,
                "refusals": dict(self.refusals), "last_refusal": self.last_refusal, "loop_busy": round(headroom.busy, 2), "loop_lag_ms": round(headroom.lag_s * 1000, 1),
                "drain_per_s": round(headroom.drain_per_s, 1), "refused_per_s": round(self.refused_per_s, 1), "backoff_s": round(self.backoff, 1), "bytes_per_unit": round(headroom.bytes_per_unit)}
