"""Random ids: ``uuid.uuid4().hex``, the same 32 hex digits (version 4, RFC 4122 variant),
without building a ``UUID`` object on the way, from the operating system's random bytes
drawn in batches.

A question makes about seven (its turn, its session, its idempotency key, its workflow,
each agent run's execution); through ``uuid4().hex`` each cost about 5 us of CPU, here
about a quarter of that (issue 26: Baton's own CPU per question). Why batches: each
``os.urandom`` call lets go of the interpreter lock for its system call, and on the event
loop's thread that hands the lock to any thread waiting for it (a query's, a turn's
write), which may keep it for the switch interval (5 ms) before the loop gets it back.
One draw of ``BATCH`` ids' bytes per thread makes that one hand-off in ``BATCH``. The bytes
are the same kind (the kernel's CSPRNG); a buffer is per thread and per process (a forked
child draws its own: it never reuses its parent's)."""

from __future__ import annotations

import os
import threading

_CLEARED = ~((0xF << 76) | (0x3 << 62))  # the version nibble, and the variant's two bits
_SET = (4 << 76) | (0x2 << 62)  # version 4; variant 10 (RFC 4122)
BATCH = 256  # ids' worth of random bytes drawn at once


class _Pool(threading.local):
    def __init__(self) -> None:
        self.pid = 0
        self.buffer = b""
        self.at = 0


_POOL = _Pool()


def random_hex() -> str:
    """A new random id, as ``uuid.uuid4().hex`` writes it."""
    pool = _POOL
    at = pool.at
    if at >= len(pool.buffer) or pool.pid != os.getpid():
        pool.buffer, pool.pid, at = os.urandom(16 * BATCH), os.getpid(), 0
    pool.at = at + 16
    return "%032x" % (int.from_bytes(pool.buffer[at:at + 16]) & _CLEARED | _SET)
