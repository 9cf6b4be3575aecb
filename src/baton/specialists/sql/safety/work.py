"""A count of the work ``check_safety`` does, so a test can show it grows linearly.

Time is no evidence on a shared machine, and a quadratic step hides below a few thousand
characters (a backtracking pattern took 0.5 s at 4,000 characters, 12 s at 20,000). So each
stage of the check adds what it did: characters scanned (``lexical.py``), characters handed to
a parser, identifiers read, tree nodes visited (``tree.py``, ``check.py``). Counting is off
unless a caller opens ``counting()``: the check then pays one context-variable read per stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

_CURRENT: ContextVar[WorkCount | None] = ContextVar("baton_safety_work", default=None)


@dataclass
class WorkCount:
    """Units of work by stage (``parsed``: characters given to a parser; ``nodes``: tree
    nodes visited; ``scanned``: characters or identifiers our own scanners read)."""

    parsed: int = 0
    nodes: int = 0
    scanned: int = 0

    @property
    def total(self) -> int:
        return self.parsed + self.nodes + self.scanned


@contextmanager
def counting() -> Iterator[WorkCount]:
    """Count the work of every check run inside the block (this context only)."""
    count = WorkCount()
    token = _CURRENT.set(count)
    try:
        yield count
    finally:
        _CURRENT.reset(token)


def add(*, parsed: int = 0, nodes: int = 0, scanned: int = 0) -> None:
    count = _CURRENT.get()
    if count is not None:
        count.parsed += parsed
        count.nodes += nodes
        count.scanned += scanned
