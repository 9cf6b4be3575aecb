"""Bulkheads: each of a workspace's stores does its blocking I/O on threads of its own,
with a bounded queue, a time limit per call and a breaker, so a slow or dead store stalls
only what needs that store.

``Bulkhead(name)`` runs synchronous calls (SQLAlchemy, SQLite) in ``threads`` threads of
its own. Per call:

- ``await run(fn, *args)``: waits at most ``timeout_s``; ``DependencyUnavailable`` when
  the store is *down* (the breaker is open), when ``queue`` calls are already waiting
  (``busy``), or when the call outlives its time (``timeout``; the thread finishes on its
  own, bounded by the engine's connect and statement timeouts, but no caller waits for it).
- ``advise(fn, *args, kind=...)``: an *advisory* write (insights, learnings, usage counts)
  that no answer waits for, queued on the bulkhead's ``AdvisoryQueue``
  (``advisory_queue.py``): bounded, shed by policy (least valuable kind first, oldest
  first), never timed; refused at once (counted ``failed``) while the store is down. Every
  write offered ends ``stored``, ``shed`` or ``failed``, counted (``state()["writes"]``,
  ``/metrics``); the log says so once per ``warn_interval_s`` per dependency, with the
  counts, never once per write and never with a traceback.

The breaker: ``failures_to_open`` consecutive failures (errors or timeouts) mark the
store *down* for ``cooldown_s``; calls fail at once meanwhile (no request waits for a dead
store); after the cooldown one call is let through, and its success closes the breaker.
``state()`` is ``ok`` / ``degraded`` (recent failures, or a queue at its bound) / ``down``,
with counts, for ``/health/ready``; ``load()`` is how full its queue is, for admission control.

Outages are logged as one line per change of state (``baton.outages``): "memory is down:
OperationalError: ..." at the first failure after a success, "memory is back after 12 failed
attempts in 9.8 s" at the first success after that; advisory writes dropped are logged once
per interval, with the count. ``state()`` is ``degraded`` for failures of the last ``RECENT_S`` seconds only, and
``ok`` as soon as a call succeeds after an outage: readiness follows the store within
seconds. ``probe(fn)`` (``/health/ready``) tries the store even while the breaker is open,
and its success closes it.

Decisions written down here (the issue was silent): a bulkhead's threads are its own
(never the event loop's default pool, which everything else shares); ``close()`` stops
accepting work, lets the queued advisory writes finish for at most ``drain_s`` seconds and
drops the rest (counted in the log).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from baton.dependency_waits import timed_in_thread
from baton.errors import BatonError
from baton.outages import OutageLog
from baton.state.advisory_queue import AdvisoryQueue

log = logging.getLogger("baton.state.bulkheads")
T = TypeVar("T")

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_WARN_INTERVAL_S = 30.0
RECENT_S = 3.0  # a failure this recent (and no success since) makes the store "degraded"


class DependencyUnavailable(BatonError):
    """A store could not serve a call: ``reason`` is ``down`` (breaker open), ``busy``
    (its queue is full), ``timeout`` (the call took longer than allowed), ``error``
    (it raised; ``__cause__`` says what), ``closed``, or, for an advisory write, ``shed``
    (the advisory queue's policy dropped it)."""

    def __init__(self, dependency: str, reason: str, detail: str = "") -> None:
        super().__init__(f"{dependency} is unavailable ({reason}{': ' + detail if detail else ''})")
        self.dependency = dependency
        self.reason = reason


def _answered(exc: BaseException) -> bool:
    """A Baton error that is the store's answer, not its failure (``MemoryUnavailableError``
    and ``DependencyUnavailable`` are failures)."""
    from baton.memory.errors import MemoryUnavailableError

    return isinstance(exc, BatonError) and not isinstance(exc, (MemoryUnavailableError, DependencyUnavailable))


class Bulkhead:
    def __init__(self, name: str, *, threads: int = 2, queue: int = 32, timeout_s: float = DEFAULT_TIMEOUT_S,
                 failures_to_open: int = 3, cooldown_s: float = 5.0, warn_interval_s: float = DEFAULT_WARN_INTERVAL_S,
                 drain_s: float = 2.0, advisory_workers: int | None = None, advisory_capacity: int = 512) -> None:
        self.name = name
        self.threads = threads
        self.queue = queue
        self.timeout_s = timeout_s
        self.failures_to_open = failures_to_open
        self.cooldown_s = cooldown_s
        self.warn_interval_s = warn_interval_s
        self.drain_s = drain_s
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._pending = 0  # submitted, not finished (running + queued)
        self._consecutive = 0
        self._open_until = 0.0
        self._probing = False
        self._last_failure = 0.0
        self._last_error = ""
        self._failed_in_window = 0
        self._dropped_in_window = 0
        self._window_started = 0.0
        self._closed = False
        self.outage = OutageLog(name, log)
        self.advisory = AdvisoryQueue(name, workers=advisory_workers or threads, capacity=advisory_capacity,
                                      on_done=self._advised, on_drop=self.count_drop,
                                      shed_error=lambda: DependencyUnavailable(self.name, "shed", "shed by policy"))
        self.totals = {"calls": 0, "failed": 0, "dropped": 0}

    # --- the calls -------------------------------------------------------------------------------

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """``fn(*args)`` on this bulkhead's threads (module docstring)."""
        try:
            self._admit()
        except DependencyUnavailable as exc:
            if exc.reason == "down":
                self.outage.failed(exc)  # refused while the breaker is open: counted in the outage's line
            raise
        future = asyncio.get_running_loop().run_in_executor(self._pool(), self._call, timed_in_thread(fn), args)
        try:
            result = await asyncio.wait_for(asyncio.shield(future), timeout or self.timeout_s)
        except TimeoutError:
            self.count_failure("timeout")
            raise DependencyUnavailable(self.name, "timeout", f"no answer within {timeout or self.timeout_s:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if _answered(exc):  # the store answered: "no such session", "invalid record"...
                self._succeeded()
                raise
            self.count_failure(exc)
            raise DependencyUnavailable(self.name, "error", type(exc).__name__) from exc
        self._succeeded()
        return result

    async def probe(self, fn: Callable[..., T], *args: Any, timeout: float) -> T:
        """``fn(*args)`` even while the breaker is open (a readiness probe): its success
        closes the breaker, its failure counts as one."""
        with self._lock:
            if self._closed:
                raise DependencyUnavailable(self.name, "closed")
            self._pending += 1
        future = asyncio.get_running_loop().run_in_executor(self._pool(), self._call, fn, args)
        try:
            result = await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            self.count_failure("timeout")
            raise DependencyUnavailable(self.name, "timeout", f"no answer within {timeout:g} s") from None
        except Exception as exc:
            self.count_failure(exc)
            raise DependencyUnavailable(self.name, "error", type(exc).__name__) from exc
        self._succeeded()
        return result

    def advise(self, fn: Callable[..., Any], *args: Any, kind: str = "insight") -> bool:
        """Queue an advisory write; False when it was refused or shed at once (module docstring)."""
        future = self.advice(fn, *args, kind=kind)
        return future is not None and not (future.done() and future.exception() is not None)

    def advice(self, fn: Callable[..., Any], *args: Any, kind: str = "insight") -> Future[Any] | None:
        """``advise``, returning the write's future (None: refused, the store is down or the
        bulkhead closed); a write shed later fails its future with reason ``shed``."""
        try:
            self._admit(advisory=True)
        except DependencyUnavailable:
            self.advisory.fail()
            self.count_drop()
            return None
        return self.advisory.offer(fn, args, kind)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait (at most ``timeout`` s) for the advisory writes already queued."""
        if self.advisory.waiting():
            await asyncio.to_thread(self.advisory.wait_idle, self.drain_s if timeout is None else timeout)

    def _advised(self, exc: BaseException | None) -> None:
        if exc is None or _answered(exc):
            self._succeeded()
        else:
            self.count_failure(exc)
            self.count_drop()

    # --- inside ----------------------------------------------------------------------------------

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix=f"baton-{self.name}")
        return self._executor

    def _admit(self, advisory: bool = False) -> None:
        with self._lock:
            if self._closed:
                raise DependencyUnavailable(self.name, "closed")
            now = time.monotonic()
            if self._open_until > now:
                raise DependencyUnavailable(self.name, "down", self._last_error)
            if self._open_until and not self._probing:  # half-open: let this one call probe the store
                self._probing = True
            elif self._open_until:
                raise DependencyUnavailable(self.name, "down", self._last_error)
            self.totals["calls"] += 1
            if advisory:  # the advisory queue bounds itself (by policy)
                return
            if self._pending >= self.threads + self.queue:
                raise DependencyUnavailable(self.name, "busy", f"{self._pending} calls waiting")
            self._pending += 1

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        try:
            return fn(*args)
        finally:
            with self._lock:
                self._pending -= 1

    def _succeeded(self) -> None:
        with self._lock:
            recovered = self._open_until != 0.0
            self._consecutive = 0
            self._open_until = 0.0
            self._probing = False
            if recovered:
                self._last_failure = 0.0  # back: no longer "degraded" for the outage just ended
        self.outage.ok()

    def count_failure(self, what: str | BaseException) -> None:
        """Count one failed call (``what``: the error, its name, or ``timeout``) towards the
        breaker and the outage log; for work run beside the bulkhead on its behalf (the
        deep memory analysis)."""
        name = what if isinstance(what, str) else type(what).__name__
        with self._lock:
            now = time.monotonic()
            self._consecutive += 1
            self._last_failure = now
            self._last_error = name
            self._failed_in_window += 1
            self.totals["failed"] += 1
            if self._consecutive >= self.failures_to_open or self._probing:
                self._open_until = now + self.cooldown_s
                self._probing = False
        self.outage.failed(what)  # one line at the first failure since a success; counted after that

    def count_drop(self) -> None:
        """Count one advisory write not stored (shed or failed; logged once per interval, with the count)."""
        with self._lock:
            self._dropped_in_window += 1
            self.totals["dropped"] += 1
        self._maybe_warn()

    def _maybe_warn(self) -> None:
        """Dropped advisory writes: one line per interval, with the count (an outage's own
        lines are ``self.outage``'s)."""
        with self._lock:
            now = time.monotonic()
            if self._window_started and now - self._window_started < self.warn_interval_s:
                return
            dropped = self._dropped_in_window
            self._window_started, self._failed_in_window, self._dropped_in_window = now, 0, 0
            state = self._state_locked(now)
            error = self._last_error
        log.warning("%s is %s (%d advisory writes dropped in the last %g s)%s",
                    self.name, state, dropped, self.warn_interval_s, f": {error}" if error and state != "ok" else "")

    def _state_locked(self, now: float) -> str:
        if self._open_until > now or (self._open_until and self._probing):
            return "down"
        if self._last_failure and now - self._last_failure < RECENT_S:  # older failures: nothing has failed since
            return "degraded"
        if self._pending >= self.threads + self.queue or self.advisory.full():
            return "degraded"
        return "ok"

    def load(self) -> float:
        """Calls running and queued over the bound (``threads + queue``): 1.0 is full. Admission
        control reads it (``baton.server.admission``): questions admitted past a full queue
        would only fail ``busy``. A read without the lock: one int, a snapshot is enough."""
        return self._pending / (self.threads + self.queue)

    def state(self) -> dict[str, Any]:
        with self._lock:
            now = time.monotonic()
            return {"state": self._state_locked(now), "in_flight": self._pending, "last_error": self._last_error or None,
                    **self.totals, "writes": self.advisory.counts(), "queued": self.advisory.waiting()}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        deadline = time.monotonic() + self.drain_s
        self.advisory.close()  # writes still queued fail (counted); running ones may finish until the deadline
        self.advisory.wait_idle(self.drain_s)
        if executor is not None:
            threads = list(getattr(executor, "_threads", ()))
            executor.shutdown(wait=False, cancel_futures=True)
            for thread in threads:  # a thread stuck on a dead store is left behind, not waited for forever
                thread.join(max(0.0, deadline - time.monotonic()))


class Bulkheads:
    """A workspace's bulkheads: ``memory`` (reads and the memory API), ``insights``
    (advisory writes: insights, learnings, usage), ``knowledge`` (document indexes)."""

    def __init__(self, workspace: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.memory = Bulkhead(f"memory[{workspace}]", threads=3, queue=32, timeout_s=timeout_s)
        self.insights = Bulkhead(f"insights[{workspace}]", threads=1, queue=64, timeout_s=timeout_s, advisory_workers=4)
        self.knowledge = Bulkhead(f"knowledge[{workspace}]", threads=2, queue=32, timeout_s=timeout_s)

    def __iter__(self) -> Iterator[Bulkhead]:
        return iter((self.memory, self.insights, self.knowledge))

    async def drain(self, timeout: float = 2.0) -> None:
        for bulkhead in self:
            await bulkhead.drain(timeout)

    def close(self) -> None:
        for bulkhead in self:
            bulkhead.close()
