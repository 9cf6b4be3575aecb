"""Headroom: what a serving process has left to give, measured rather than counted.

``Headroom.observe`` takes one ``Reading`` (wall clock, the event loop thread's CPU time,
the process's CPU time, its resident memory) per tick of the measuring task, and keeps,
smoothed:

- ``lag_s``: how late the tick's timer fired, less how late the machine wakes an idle thread
  (``Sentinel``): the time a callback ready now waits for the loop's queued work, the delay
  Baton itself adds to every step of every answer;
- ``busy``: the share of the CPU the interpreter uses (``busy_share``: the loop's thread,
  and the threads that share its interpreter lock);
- ``drain_per_s``: admitted work finished per second (for ``Retry-After``);
- ``bytes_per_unit``: resident memory per unit of work in flight, over what the process
  held when it was idle (for the memory cap).

Pure arithmetic over its inputs: tests feed it readings of their own (a fake clock).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

LAG_SHARE = 0.01  # the loop may be late by this share of what a question takes (``lag_bound``)
MAX_LAG_BOUND = 0.2  # ... but never more than this late, however long the questions take
LOCK_BOUND_LOOP = 0.5  # busy_share: a loop thread this busy shares the interpreter lock with its threads
MIN_UNITS_FOR_MEMORY = 64  # fewer in flight: RSS noise (allocator arenas, caches) outweighs them
DEFAULT_BYTES_PER_UNIT = 64 << 10  # until measured (bench/server_throughput.py measures 20-40 KiB per open stream)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def busy_share(loop: float, process: float) -> float:
    """How busy the interpreter is, from the CPU shares of the loop's thread and of the whole
    process. Python's threads share one interpreter lock, so the bulkheads' threads (queries,
    session writes) spend the loop's time whenever they run Python: measured on this machine,
    a saturated worker's loop thread sat at 80 % while the process used a whole core, and
    questions queued for the lock with the loop's share alone under the limit. So while the
    loop is itself busy (``LOCK_BOUND_LOOP``), the process's share counts, up to one core; a
    native engine's parallel threads (DuckDB) beside an idle loop do not."""
    return max(loop, min(process, 1.0)) if loop >= LOCK_BOUND_LOOP else loop


def rss_bytes() -> int:
    """This process's resident memory (Linux ``/proc``; 0 elsewhere: no memory estimate)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


class Sentinel:
    """How late the machine wakes a thread that has nothing to do but wake: a daemon thread
    sleeping ``tick_s`` at a time, its oversleep smoothed. The event loop's own timers are late
    by that much *plus* the work queued on the loop; only the difference is this process's
    load. On a machine whose cores other processes share, the scheduler alone makes every
    timer tens of milliseconds late (measured: 40-90 ms at a load average of 7 on 2 cores),
    which no refusal of ours would change. Python code in the thread waits for the interpreter
    lock too, at most its switch interval (5 ms) beyond that."""

    def __init__(self, tick_s: float) -> None:
        self.tick_s = tick_s
        self.lag_s = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="baton-headroom", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread = None
        self.lag_s = 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            if self._stop.wait(self.tick_s):
                return
            self.lag_s = 0.6 * self.lag_s + 0.4 * max(0.0, time.monotonic() - started - self.tick_s)


@dataclass(frozen=True)
class Reading:
    wall: float
    loop_cpu: float
    process_cpu: float
    rss: int
    os_lag: float = 0.0  # the machine's own lateness (``Sentinel``), subtracted from the loop's

    @classmethod
    def now(cls, os_lag: float = 0.0) -> Reading:
        """A reading taken on the event loop's thread (``thread_time`` is that thread's)."""
        return cls(time.monotonic(), time.thread_time(), time.process_time(), rss_bytes(), os_lag)


class Headroom:
    def __init__(self, max_busy: float, max_lag_s: float) -> None:
        self.max_busy = max_busy
        self.max_lag_s = max_lag_s
        self.busy = 0.0
        self.lag_s = 0.0
        self.drain_per_s = 0.0
        self.bytes_per_unit = float(DEFAULT_BYTES_PER_UNIT)
        self.measured_memory = False
        self.peak = 0.0  # the most units in flight since the process last rested
        self.idle_rss = 0
        self._last: Reading | None = None
        self._finished = 0

    def start(self, reading: Reading, finished: int) -> None:
        """The measuring task (re)starts: the next ``observe`` measures from here."""
        self._last = reading
        self._finished = finished
        if not self.idle_rss:  # the first measurement of this process: what it holds with next to nothing in flight
            self.idle_rss = reading.rss

    def observe(self, reading: Reading, expected_s: float, in_flight: float, finished: int) -> None:
        """One tick: ``expected_s`` is how long the tick asked to sleep, ``in_flight`` the
        units admitted now, ``finished`` the units released since the process started."""
        last = self._last
        self._last, done, self._finished = reading, finished - self._finished, finished
        if last is None:
            return
        elapsed = max(1e-6, reading.wall - last.wall)
        share = busy_share((reading.loop_cpu - last.loop_cpu) / elapsed, (reading.process_cpu - last.process_cpu) / elapsed)
        self.busy = 0.6 * self.busy + 0.4 * share
        lag = max(0.0, elapsed - expected_s - reading.os_lag)  # the loop's own lateness: its queued work
        self.lag_s = 0.6 * self.lag_s + 0.4 * lag  # smoothed as the busy share: one late timer is not saturation
        self.drain_per_s = 0.8 * self.drain_per_s + 0.2 * (done / elapsed)
        self.peak = max(self.peak, in_flight)
        if self.peak >= MIN_UNITS_FOR_MEMORY and in_flight >= 0.9 * self.peak and reading.rss > self.idle_rss > 0:
            # at the most in flight since rest: resident memory seldom shrinks, so what it grew by is the peak's
            per_unit = (reading.rss - self.idle_rss) / self.peak
            self.bytes_per_unit = per_unit if not self.measured_memory else 0.9 * self.bytes_per_unit + 0.1 * per_unit
            self.measured_memory = True

    def idle(self, reading: Reading) -> None:
        """Nothing (or one question) in flight: what the process holds at rest, and no load."""
        self.idle_rss = reading.rss
        self.peak = 0.0
        self.busy = 0.0
        self.lag_s = 0.0
        self._last = None

    def question_s(self, in_flight: float) -> float:
        """How long a question takes now, by Little's law: units in flight over units finished
        a second; 0 when nothing finished lately (unknown). Admission prefers the answers'
        own times (``OwnDelays.typical_s``): this estimate swells whenever the drain falls
        (measured: a line wait of 1 s for questions of 2 s, while refusals cut the drain)."""
        return in_flight / self.drain_per_s if self.drain_per_s > 0 else 0.0

    def lag_bound(self, question_s: float) -> float:
        """How late the loop may run: ``max_lag_s``, or a share (``LAG_SHARE``) of what a
        question takes now (``question_s``) when that is more, at most ``MAX_LAG_BOUND``. A
        question spans about ten turns of the loop, so each pays about ten times the lag:
        25 ms keeps CPU-bound answers near 250 ms, and a question that waits 10 s on its model
        loses a tenth of that at 100 ms. A fixed 25 ms refused a third of the questions at a
        10 s model and concurrency 1,000 (the loop 25-80 ms late, bunched answers, at 25-50 %
        busy), which cost them a Retry-After of seconds to save a few hundredths."""
        return max(self.max_lag_s, min(MAX_LAG_BOUND, LAG_SHARE * question_s))

    def saturated(self, question_s: float = 0.0) -> str | None:
        """Why the process has no headroom now, or None. The loop's lag counts beyond what
        the machine makes any thread wait (``Reading.os_lag``), over ``lag_bound`` for
        questions taking ``question_s``."""
        if self.busy > self.max_busy:
            return f"the event loop and its threads are {self.busy:.0%} busy: the CPU is saturated"
        if self.lag_s > self.lag_bound(question_s):
            return f"the event loop runs {self.lag_s * 1000:.0f} ms late with work queued: the CPU is saturated"
        return None
