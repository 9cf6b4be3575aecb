"""The queue of advisory writes (insights, learnings, usage counts): bounded, shed by an
explicit policy, drained by a few threads, every write accounted for.

Why: advisory writes used to wait in a thread pool's queue behind one thread while a
watchdog timed them from submission: under load, writes queued behind the workspace's
memory lock outlived the watchdog, three "timeouts" opened the breaker, and everything
offered meanwhile was dropped, though memory was up. Now:

- ``offer(fn, args, kind)`` queues a write (``kind``: ``usage``, ``learning`` or
  ``insight``) and never blocks. When ``capacity`` writes are already waiting, the policy
  sheds one: the least valuable kind first (``VALUE``: a usage count before a learning
  before an insight), the oldest of that kind; the new write itself when it is the least
  valuable. A shed write is counted ``shed`` and its future fails with
  ``DependencyUnavailable(reason="shed")``.
- ``workers`` threads (started on demand, gone when the queue is empty) run the writes in
  the order offered. Several run at once so that the memory store's group commit
  (``baton.memory.group_commit``) can put them in one transaction.
- Nothing is timed: a write ends when the store answers. A hung store answers with an
  error once its engine's connect or statement timeout passes; until then the bounded queue
  sheds by policy.

Every write offered ends as exactly one of ``stored``, ``shed`` (by the policy) or
``failed`` (the store refused or failed it, or it was offered while the store was down or the
queue closed); ``counts()`` has the four totals.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

VALUE = {"usage": 0, "learning": 1, "insight": 2}
OUTCOMES = ("offered", "stored", "shed", "failed")


@dataclass(eq=False)
class _Advice:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    value: int
    future: Future[Any] = field(default_factory=Future)


class AdvisoryQueue:
    """``on_done(exc)`` is called after each write ran (``None`` when it succeeded), for the
    owner's breaker; ``on_drop()`` for each write shed or failed at closing (the owner's
    log); ``shed_error()`` makes the exception a shed write's future carries."""

    def __init__(self, name: str, *, workers: int, capacity: int, on_done: Callable[[BaseException | None], None],
                 on_drop: Callable[[], None], shed_error: Callable[[], BaseException]) -> None:
        self.name = name
        self.workers = workers
        self.capacity = capacity
        self._on_done = on_done
        self._on_drop = on_drop
        self._shed_error = shed_error
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: deque[_Advice] = deque()
        self._running = 0  # worker threads alive
        self._active = 0  # writes being run
        self._closed = False
        self._counts = dict.fromkeys(OUTCOMES, 0)

    def offer(self, fn: Callable[..., Any], args: tuple[Any, ...], kind: str = "insight") -> Future[Any]:
        """Queue a write; its future ends with the write (or with its shedding)."""
        advice = _Advice(fn, args, VALUE.get(kind, VALUE["insight"]))
        shed: _Advice | None = None
        start = False
        with self._lock:
            self._counts["offered"] += 1
            if self._closed:
                self._counts["failed"] += 1
                advice.future.set_exception(self._shed_error())
                return advice.future
            if len(self._queue) >= self.capacity:
                shed = self._victim(advice)
                self._counts["shed"] += 1
            if shed is not advice:
                self._queue.append(advice)
                if self._running < self.workers:
                    self._running += 1
                    start = True
        if shed is not None:
            shed.future.set_exception(self._shed_error())
            self._on_drop()
        if start:
            threading.Thread(target=self._work, name=f"baton-{self.name}", daemon=True).start()
        return advice.future

    def fail(self) -> None:
        """Count a write offered but refused before queueing (the store is down)."""
        self.account("failed")

    def account(self, outcome: str) -> None:
        """Count a write offered and run beside the queue (the deep analysis), with its outcome."""
        with self._lock:
            self._counts["offered"] += 1
            self._counts[outcome] += 1

    def _victim(self, new: _Advice) -> _Advice:
        """The write the policy sheds (lock held): the oldest of the least valuable kind,
        or ``new`` when nothing queued is worth less."""
        lowest = min(self._queue, key=lambda a: a.value)  # min keeps the first (oldest) of equals
        if lowest.value > new.value:
            return new
        self._queue.remove(lowest)
        return lowest

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._running -= 1
                    self._idle.notify_all()
                    return
                advice = self._queue.popleft()
                self._active += 1
            error: BaseException | None = None
            try:
                result = advice.fn(*advice.args)
            except BaseException as exc:  # counted and handed to the future; a worker never dies of a write
                error = exc
            with self._lock:
                self._active -= 1
                self._counts["stored" if error is None else "failed"] += 1
            self._on_done(error)
            if error is None:
                advice.future.set_result(result)
            else:
                advice.future.set_exception(error)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def waiting(self) -> int:
        """Writes queued or running."""
        with self._lock:
            return len(self._queue) + self._active

    def full(self) -> bool:
        with self._lock:
            return len(self._queue) >= self.capacity

    def wait_idle(self, timeout: float) -> bool:
        """Block until every queued write ran (True), or ``timeout`` passed (False)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._queue and not self._running, timeout)

    def close(self) -> int:
        """Stop accepting writes and fail those still queued (not yet running); returns how many."""
        with self._lock:
            self._closed = True
            left = list(self._queue)
            self._queue.clear()
            self._counts["failed"] += len(left)
        for advice in left:
            advice.future.set_exception(self._shed_error())
            self._on_drop()
        return len(left)
