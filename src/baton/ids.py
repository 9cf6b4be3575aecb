"""Random ids: ``uuid.uuid4().hex``, the same 32 hex digits (version 4, RFC 4122 variant),
without building a ``UUID`` object on the way.

A question makes about seven (its turn, its session, its idempotency key, its workflow,
each agent run's execution); through ``uuid4().hex`` each cost about 5 us of CPU, here
about a quarter of that (issue 26: Baton's own CPU per question)."""

from __future__ import annotations

import os

_CLEARED = ~((0xF << 76) | (0x3 << 62))  # the version nibble, and the variant's two bits
_SET = (4 << 76) | (0x2 << 62)  # version 4; variant 10 (RFC 4122)


def random_hex() -> str:
    """A new random id, as ``uuid.uuid4().hex`` writes it."""
    return "%032x" % (int.from_bytes(os.urandom(16)) & _CLEARED | _SET)
