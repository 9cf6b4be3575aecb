"""How admission (``admission.py``) makes a question wait a little rather than refuse it.

A burst is met by slow start (TCP's, as the limiters above have it): the measurement
comes every tick, but a thousand questions can arrive between two ticks, each looking at
the same stale headroom. So units in flight may at most triple per tick while healthy
(``START`` before the first one); a question past that waits for the next tick's
measurement (at most ``WAIT_TICKS``: 300 ms on time; while the process is saturated, at
most ``line_wait_s``: it has no allowance until it is not) and is then admitted, or refused if
the process saturated meanwhile (a key under its share of what is in flight skips the
wait). With a 10 s model, 1,000 questions arriving at once are all admitted within a
few ticks; with CPU-bound questions, what the first ticks measured turns the rest away.

At the adaptive limit (saturated or not), a question waits in line, first come first served,
at most ``line_wait_s``: ``LINE_WAIT_S``, or a twentieth of what a question takes now when that
is more (up to ``MAX_LINE_WAIT_S``: half a second for questions that wait 10 s on their model,
which were refused after 0.1 s in line and then waited seconds for their ``Retry-After``; 50 ms
for questions of 0.2 s, whose p99 a 0.1 s wait in line took past twice their model's time); and a
released slot goes to the first in line, not to whoever asks next. Without the line, clients whose questions take
2 ms, asking again the moment they are answered, took every slot they freed, and questions
waiting on a 2 s model were refused at every try (measured: 0 of 750 admitted in a mix of
both at concurrency 500).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import collections

    from baton.server.admission import Ticket

START = 16  # units admitted before the first measurement; then in flight may at most triple per tick (slow start)
WAIT_TICKS = 6  # a question past the tick's allowance waits at most this many ticks for the next, then is refused
LINE_WAIT_S = 0.05  # a question at the adaptive limit waits at least this long in line for a released slot (p99 pays it)
LINE_WAIT_SHARE = 0.05  # ... or this share of what a question takes now (``line_wait_s``)
MAX_LINE_WAIT_S = 1.0


class Waiting:
    """``Admission``'s waits: slow start (``allowance``, ``_ticked``) and the line (``_line``, ``_handed``)."""

    in_flight: int
    limit: float
    allowance: float
    waiting: int
    why: str | None
    by_key: dict[str, int]
    _line: collections.deque[asyncio.Future[None]]
    _handed: int
    _ticked: asyncio.Event | None
    _watch: asyncio.Task | None

    def refusal(self, key: str | None = None, cost: int = 1) -> tuple[str, int] | None:
        raise NotImplementedError

    def take(self, key: str | None = None, cost: int = 1) -> Ticket:
        raise NotImplementedError

    def memory_cap(self) -> int:
        raise NotImplementedError

    def question_s(self) -> float:
        raise NotImplementedError

    def line_wait_s(self) -> float:
        """How long a question may wait in line (module docstring)."""
        return max(LINE_WAIT_S, min(MAX_LINE_WAIT_S, LINE_WAIT_SHARE * self.question_s()))

    def _refuse(self, why: str, cost: int) -> NoReturn:
        raise NotImplementedError

    async def admit(self, key: str | None = None, cost: int = 1) -> Ticket:
        """``take``, except that past the tick's allowance (a burst: slow start) a question
        waits for the next tick's measurement, at most ``WAIT_TICKS``, rather than pile on
        before anything was measured; refused when it still has no room."""
        started = asyncio.get_running_loop().time()
        deadline = started + self.line_wait_s()
        for _ in range(WAIT_TICKS):
            if cost <= self.allowance or not self.in_flight or self._watch is None or self._watch.done():
                break
            if self.why is not None and asyncio.get_running_loop().time() >= deadline:
                break  # saturated: no allowance until it is not; a question waits for that no longer than in line
            held = self.by_key.get(key or "", 0)
            if held + cost <= self.in_flight / (len(self.by_key) + (held == 0)):
                break  # a key under its share of what is in flight does not queue behind another's burst
            if self.refusal(key, cost) is not None:
                break  # refused now (saturated, over its share): at once, not after a wait
            if self._ticked is None:
                self._ticked = asyncio.Event()
            ticked = self._ticked
            self.waiting += 1
            try:
                await ticked.wait()
            finally:
                self.waiting -= 1
        else:
            if cost > self.allowance:
                self._refuse(f"{self.in_flight} units in flight and still growing: no room within {WAIT_TICKS} measurements", cost)
        if self._joins_line(key, cost):
            wait = max(0.0, deadline - asyncio.get_running_loop().time())  # one wait in all: the line's, less the ticks'
            if not await self._wait_in_line(cost, wait):
                self._refuse(f"{self.in_flight} units in flight, at the adaptive limit of {self.limit:.0f}: no slot within "
                             f"{deadline - started:.2f} s", cost)
        return self.take(key, cost)

    def _joins_line(self, key: str | None, cost: int) -> bool:
        """Whether a question waits in line for a slot: others wait already (first come, first
        served), or the adaptive limit stops it (the cap refuses at once). A key under its
        share of what is in flight never waits."""
        if not self.in_flight:
            return False
        held = self.by_key.get(key or "", 0)
        keys = len(self.by_key) + (held == 0)
        if keys > 1 and held + cost <= self.in_flight / keys:
            return False
        if self._line or self._handed:
            return True
        after = self.in_flight + cost
        return self.limit < after <= self.memory_cap()  # at the limit, saturated or not: freed slots go in order

    async def _wait_in_line(self, cost: int, wait_s: float) -> bool:
        """Wait (at most ``wait_s``: ``line_wait_s``) until a released slot is handed to this question:
        True with it (or with a refusal of another kind for ``take`` to give), False without."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        front = False
        while True:
            turn = loop.create_future()
            if front:
                self._line.appendleft(turn)
            else:
                self._line.append(turn)
            try:
                await asyncio.wait_for(asyncio.shield(turn), max(0.0, deadline - loop.time()))
            except (TimeoutError, asyncio.CancelledError) as stop:
                if turn.done() and not turn.cancelled():
                    self._handed -= 1
                    if isinstance(stop, asyncio.CancelledError):
                        self._hand_on()  # handed a slot it will not use: to the next in line
                        raise
                    return True  # the slot came as the wait ended: keep it
                turn.cancel()
                with contextlib.suppress(ValueError):
                    self._line.remove(turn)
                if isinstance(stop, asyncio.CancelledError):
                    raise
                return False
            self._handed -= 1
            after = self.in_flight + cost
            if after <= self.limit or after > self.memory_cap():
                return True
            front = True  # the slot went to another meanwhile: back to the front of the line

    def _hand_on(self) -> None:
        while self._line:
            turn = self._line.popleft()
            if not turn.done():
                turn.set_result(None)
                self._handed += 1
                return
