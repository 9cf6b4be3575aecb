"""Admission control: one process answers at most ``max_in_flight`` questions at once, and
takes no new one while its CPU is saturated.

Beyond ``max_in_flight``, up to ``queue`` more wait (at most ``wait_s`` seconds) for a slot;
anyone else gets a fast 503 with ``Retry-After`` and ``error_code: overloaded`` (OpenAI's
error shape on the OpenAI-compatible route) instead of joining a queue whose every member
would then be late. A count alone cannot know how many questions a process can carry (a
200 ms model allows few, a 5 s model many), so the process also watches how busy its event
loop's thread is: every ``TICK_S`` it compares the thread's CPU time with the time passed;
while that share (smoothed) is over ``max_busy``, the CPU is the bottleneck and a new
question is refused at once (one is always admitted when none is in flight; the bulkheads'
threads count too, as they hold the same interpreter lock: ``busy_share``). Questions
already admitted then finish at the pace the CPU allows, and no more pile on. So the latency of admitted
questions stays bounded whatever the offered load: what grows under overload is the share
refused, never everyone's wait.

Questions are ``/v1/ask``, ``/v1/ask/stream`` and ``/v1/chat/completions``. Sessions,
memory, charts and the rest are cheap reads with their own bulkheads.

A saturated process refuses many questions a second, so a refusal must cost next to
nothing: the ``RequestGuard`` asks ``refuses()`` before the question is parsed, its key
checked or its route run, and answers the same 503 itself. The route's own ``slot()``
still decides for the questions let through. The busy share is measured only while two or more questions
are in flight (one alone is always admitted): a process answering one question at a time
spends nothing on it.

Decision (the issue was silent): first come, first served among waiters; ``Retry-After``
is one second (a slot frees in about one question's time). Defaults in ``limits.py``.

Why 48 in flight and no queue by default: a question costs the process about c = 3-4 ms
of CPU (one core: the event loop), so more than about chain / c questions at once (the
model latency chain over c: 50-65 for a 200 ms model) queue for the CPU and every one of
them is late; the busy share reacts too slowly to stop a burst, the count does not. And a
wait in the queue adds to an admitted question's latency. Measured (``bench/
server_throughput.py``, 200 ms model, concurrency 200, one worker on two shared cores):
64 in flight + 64 waiting for 0.25 s gave p99 591 ms; 64 + none, 466 ms; 48 + none, 404
ms at the same 212-218 questions/s. A slower model leaves the CPU idle at 48: raise
``BATON_MAX_IN_FLIGHT`` to about its latency / 4 ms (a 2 s model: 500).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from baton.errors import BatonError

log = logging.getLogger("baton.server.admission")
RETRY_AFTER_S = 1
TICK_S = 0.05
LOCK_BOUND_LOOP = 0.5  # busy_share: a loop thread this busy shares the interpreter lock with its threads
WARN_AFTER_TICKS = 4  # the idle-CPU warning needs this many measurements first (a burst's first instant reads 0 %)
IDLE_CPU_WARNING_S = 60.0  # at most one "the limit, not the CPU, refused" warning a minute
OVERLOADED = "the server is answering as many questions as it can; try again shortly"


def busy_share(loop: float, process: float) -> float:
    """How busy the interpreter is, from the CPU shares of the loop's thread and of the whole
    process. Python's threads share one interpreter lock, so the bulkheads' threads (queries,
    session writes) spend the loop's time whenever they run Python: measured on this machine,
    a saturated worker's loop thread sat at 80 % while the process used a whole core, and
    questions queued for the lock with the loop's share alone under the limit. So while the
    loop is itself busy (``LOCK_BOUND_LOOP``), the process's share counts, up to one core; a
    native engine's parallel threads (DuckDB) beside an idle loop do not."""
    return max(loop, min(process, 1.0)) if loop >= LOCK_BOUND_LOOP else loop


class Overloaded(BatonError):
    """No slot for this question now; try again after ``retry_after`` seconds."""

    retry_after = RETRY_AFTER_S


class Admission:
    def __init__(self, max_in_flight: int, queue: int, wait_s: float, max_busy: float | None = None) -> None:
        self.max_in_flight = max_in_flight
        self.queue = queue
        self.wait_s = wait_s
        self.max_busy = max_busy
        self.in_flight = 0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self.refused = 0
        self.admitted = 0
        self.busy = 0.0
        self._watch: asyncio.Task | None = None
        self._warned_at = -IDLE_CPU_WARNING_S
        self._ticks = 0  # busy-share measurements since the measuring task last started

    def _watch_busy(self) -> None:
        if self.max_busy is None:
            return
        if self._watch is None or self._watch.done() or self._watch.get_loop() is not asyncio.get_running_loop():
            self._watch = asyncio.get_running_loop().create_task(self._measure())

    async def _measure(self) -> None:
        wall, loop_cpu, process_cpu = time.monotonic(), time.thread_time(), time.process_time()  # on the loop's thread
        self._ticks = 0
        while True:
            await asyncio.sleep(TICK_S)
            self._ticks += 1
            now_wall, now_loop, now_process = time.monotonic(), time.thread_time(), time.process_time()
            elapsed = max(1e-6, now_wall - wall)
            share = busy_share((now_loop - loop_cpu) / elapsed, (now_process - process_cpu) / elapsed)
            wall, loop_cpu, process_cpu = now_wall, now_loop, now_process
            self.busy = 0.6 * self.busy + 0.4 * share
            if self.in_flight <= 1 and not self._waiters:
                self.busy = 0.0
                return  # one question alone is always admitted: stop measuring until a second comes

    def saturated(self) -> str | None:
        """Why the process cannot take another question now (its busy share, ``busy_share``,
        is over ``max_busy``), or None; never while nothing is in flight."""
        if self.in_flight and self.max_busy is not None and self.busy > self.max_busy:
            return f"the event loop and its threads are {self.busy:.0%} busy: the CPU is saturated"
        return None

    def refuses(self) -> bool:
        """Whether a question arriving now would be refused at once (``RequestGuard`` asks
        before the request is parsed, so that a refusal costs next to nothing)."""
        if self.saturated() is not None:
            return True
        return not (self.in_flight < self.max_in_flight and not self._waiters) and len(self._waiters) >= self.queue

    def count_refusal(self) -> None:
        """Count a refusal; when it came from the count while the CPU had room to spare (a
        model slower than ``max_in_flight`` was sized for), say so in the log, once a minute:
        the operator's fix is a larger ``BATON_MAX_IN_FLIGHT``, and nothing else would tell."""
        self.refused += 1
        now = time.monotonic()
        measured = self._watch is not None and not self._watch.done() and self._ticks >= WARN_AFTER_TICKS  # not a burst's first instant
        if (measured and self.saturated() is None and self.busy < 0.5 and self.in_flight >= self.max_in_flight
                and now - self._warned_at >= IDLE_CPU_WARNING_S):
            self._warned_at = now
            log.warning("refused a question at %d in flight (BATON_MAX_IN_FLIGHT) while the event loop and its threads were %.0f%% busy: "
                        "the limit, not the CPU, is the bottleneck; raise BATON_MAX_IN_FLIGHT to about the model "
                        "latency chain / 4 ms", self.in_flight, self.busy * 100)

    def close(self) -> None:
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot while answering; ``Overloaded`` when none comes in time."""
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    async def hold(self) -> Slot:
        """A slot for a streamed answer (``Slot.streaming`` releases it when the stream ends)."""
        await self._acquire()
        return Slot(self)

    async def _acquire(self) -> None:
        if self.in_flight:
            self._watch_busy()  # one question alone is always admitted: nothing to measure until a second comes
        saturated = self.saturated()
        if saturated is not None:
            self.count_refusal()
            raise Overloaded(saturated)
        if self.in_flight < self.max_in_flight and not self._waiters:
            self.in_flight += 1
            self.admitted += 1
            return
        if len(self._waiters) >= self.queue:
            self.count_refusal()
            raise Overloaded(f"{self.in_flight} questions in flight and {len(self._waiters)} waiting")
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.wait_s)
        except TimeoutError:
            if waiter.done() and not waiter.cancelled():  # the slot came as the wait ended: keep it
                self.admitted += 1
                return
            waiter.cancel()
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            self.count_refusal()
            raise Overloaded(f"no slot within {self.wait_s:g} s") from None
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot we will not use: pass it on
            else:
                waiter.cancel()
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise
        self.admitted += 1

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes to the next waiter; in_flight unchanged
                return
        self.in_flight -= 1

    def state(self) -> dict[str, float]:
        return {"in_flight": self.in_flight, "waiting": len(self._waiters), "max_in_flight": self.max_in_flight,
                "admitted": self.admitted, "refused": self.refused, "loop_busy": round(self.busy, 2)}


class Slot:
    """A slot taken for a streamed answer: released when the response ends, however it ends
    (finished, failed, or cancelled because the client left)."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._admission._release()

    def streaming(self, content: Any, **kwargs: Any) -> Any:
        from starlette.responses import StreamingResponse

        slot = self

        class _SlotStreamingResponse(StreamingResponse):
            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                try:
                    await super().__call__(scope, receive, send)
                finally:
                    slot.release()

        return _SlotStreamingResponse(content, **kwargs)

    def __del__(self) -> None:  # a response never sent (the route failed after taking the slot)
        if self._held:
            self._held = False
            try:
                self._admission._release()
            except Exception:
                pass
