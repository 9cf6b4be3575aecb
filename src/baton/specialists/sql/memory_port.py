"""The small interface through which the SQL agent uses a memory (seed 002 memory cycles).

The agent reads one compiled text per task (verified question -> SQL pairs and active
learnings for this connection) and hands back what it learned; it never reaches into the
memory's tables. ``baton.memory`` provides the store; an adapter implementing this
Protocol connects the two. Any object with these two coroutines works, so tests and users
can plug in their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from baton.specialists.sql.learnings import ExtractedLearning


@runtime_checkable
class MemoryPort(Protocol):
    async def bundle_for(self, question: str, connection_id: str) -> str:
        """Prompt text: the most relevant verified question -> SQL pairs and active
        learnings for ``connection_id`` ("" when there is nothing)."""
        ...

    async def record_learnings(self, learnings: list[ExtractedLearning]) -> None:
        """Store learnings extracted from a failed-then-fixed attempt sequence."""
        ...
