"""The delay this process adds to its answers: the third sign of saturation, beside the
event loop's lag and busy share (``headroom.py``).

Why: the lag is an average over the loop's turns, and a question takes many turns and
several thread hops (its query, its turn's write) whose waits for the interpreter lock the
lag does not see. Measured at 2 s model latency and concurrency 1,000, with the lag held
under its 25 ms bound: answers took 2.2 s at the median and 2.8 s at p99 (1.4 x the chain),
of which the turn's write alone was 60 ms at the median and 410 ms at p99. So admission
also looks at what the admitted questions actually paid.

Per answered question (``answered``): its time from admission to its reply's end, less
the time it waited on its dependencies (``baton.dependency_waits``: its model, its database,
its stores' threads), is this process's own delay. A question that waits 10 s on its model
adds nothing here, so a mix of 2 ms and 10 s answers does not confuse it (a limiter on
latency alone would take the model's time for this process's load). Each delay is scored against what the answer may
bear: ``floor_s`` (``FLOOR_S`` by default), or ``SHARE`` of its dependencies' time when that is more (a tenth of a
second beside a 2 s model call is 5 %). Over the answers of the last ``WINDOW_S``, when
the ``QUANTILE``'s score is over 1 the process is saturated.

What it does not count: the wait for admission itself (bounded on its own: ``waiting.py``),
and streamed answers (a stream's life is its reader's pace). A question that is slow on its
own, with nothing else running, is not saturation; nor are delays the machine's other
processes cause, taking the cores from this one (as ``Sentinel`` has it for the loop's lag: no
refusal of ours would change them). So the signal counts only while this process's
interpreter is itself busy (``MIN_BUSY``): on a machine shared with another busy process,
own delays of 130-280 ms at the p90 were measured while the interpreter was only 45-60 % busy.

The same answers say what a question takes (``typical_s``: the median of the last answers'
times), for the loop's lag bound and the wait in line.
"""

from __future__ import annotations

import collections
import statistics

FLOOR_S = 0.075  # a question may take this long beyond its dependencies' time (``BATON_ADMISSION_MAX_DELAY``) ...
SHARE = 0.05  # ... or this share of that time, when that is more
QUANTILE = 0.9
WINDOW_S = 0.5  # the answers of the last half second
MIN_ANSWERS = 10  # fewer in the window: too few to say
MIN_BUSY = 0.6  # the interpreter's busy share under which the delays are not saturation (module docstring)
MAX_KEPT = 4096
TYPICAL_OF = 256  # the typical answer time is the median of this many last answers
RETAKE_SHARE = 8  # ... taken again when 1/8 of them are new


class OwnDelays:
    def __init__(self, floor_s: float = FLOOR_S) -> None:
        self.floor_s = floor_s
        self._recent: collections.deque[tuple[float, float, float]] = collections.deque(maxlen=MAX_KEPT)  # (at, score, own s)
        self._times: collections.deque[float] = collections.deque(maxlen=TYPICAL_OF)
        self._typical = 0.0
        self._unranked = 0  # answers since the median was taken

    def answered(self, at: float, total_s: float, waited_s: float) -> None:
        """A question answered at ``at`` (monotonic) after ``total_s`` since its admission,
        ``waited_s`` of it on its dependencies."""
        own = max(0.0, total_s - waited_s)
        self._recent.append((at, own / max(self.floor_s, SHARE * waited_s), own))
        self._times.append(total_s)
        self._unranked += 1

    def saturated(self, now: float, busy: float) -> str | None:
        """Why the delays say the process is saturated, or None (module docstring)."""
        recent = self._recent
        while recent and recent[0][0] < now - WINDOW_S:
            recent.popleft()
        if busy < MIN_BUSY or len(recent) < MIN_ANSWERS:
            return None
        ranked = sorted(recent, key=lambda answer: answer[1])
        _, score, own = ranked[min(len(ranked) - 1, int(QUANTILE * len(ranked)))]
        if score <= 1.0:
            return None
        return (f"answers take {own * 1000:.0f} ms beyond their model and stores (p{QUANTILE * 100:.0f} of "
                f"{len(ranked)}): the CPU is saturated")

    def typical_s(self) -> float:
        """The median time of the last answers (since admission); 0 before any. What a question
        takes, for the loop's lag bound and the line's wait (``admission.py``, ``waiting.py``).
        Asked for every question: the median is taken again once an eighth of the answers it
        ranks are new (every 32 at 256), not on every answer (a sort of 256 each time)."""
        if self._unranked * RETAKE_SHARE >= len(self._times):  # also before any answer: 0 >= 0
            self._typical = statistics.median(self._times) if self._times else 0.0
            self._unranked = 0
        return self._typical

    def clear(self) -> None:
        """At rest: the load's delays are gone (the typical answer time stays: it is the workload's)."""
        self._recent.clear()
