"""The small interface through which the SQL agent uses a memory (seed 002 memory cycles).

The agent reads one compiled bundle per task (verified question -> SQL pairs and active
learnings for this connection) and hands back what it learned; it never reaches into the
memory's tables. ``baton.memory`` provides the store and ``baton.memory.bridge.SQLMemory``
implements this Protocol over it; any object with these three coroutines works, so tests
and users can plug in their own (``LearningsOnly`` supplies ``record_validation`` to a
port without a deep analysis).

Decisions:

- ``bundle_for`` returns a ``MemoryBundle``: the prompt text and the *lock* that says
  exactly what the agent knew (journal sequence, record ids and hashes; or why memory was
  unavailable). The agent copies the lock into the answer's metadata (``memory_lock``),
  so an answer can be audited against the journal later.
- ``record_validation`` is part of the port: the agent always hands the whole validation
  cycle (question, attempts, learnings, model) to the memory, which decides whether the
  deep analysis runs. A memory without one records the learnings only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from baton.llm.base import ChatModel
    from baton.specialists.sql.learnings import ExtractedLearning


@dataclass(frozen=True, slots=True)
class MemoryBundle:
    """What a memory knows for one task. ``text`` goes into the prompt ("" when there is
    nothing); ``lock`` is JSON-ready (``BundleLock.to_dict()``, or
    ``{"memory": "unavailable", "reason": ...}`` when the memory could not be read), None
    when the memory keeps no lock. ``stale`` names what the text holds that is past its
    stale window (one line each): the answer's ``staleness_warning`` says so. ``tables``: the
    tables its verified queries and lessons are about, which the table picker ranks up."""

    text: str = ""
    lock: dict[str, Any] | None = None
    stale: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()


@runtime_checkable
class MemoryPort(Protocol):
    async def bundle_for(self, question: str, connection_id: str) -> MemoryBundle:
        """The most relevant verified question -> SQL pairs and active learnings for
        ``connection_id``, with the lock saying what they were."""
        ...

    async def record_learnings(self, learnings: list[ExtractedLearning]) -> None:
        """Store learnings extracted from a failed-then-fixed attempt sequence."""
        ...

    async def record_validation(self, *, question: str, connection_id: str, learnings: list[ExtractedLearning],
                                attempts: list[dict[str, Any]], model: ChatModel | None = None) -> None:
        """The validation cycle of one answered question: its learnings, and the attempts
        (``QueryAttempt.to_dict()``) for the memory's deep analysis when it runs one."""
        ...


class LearningsOnly:
    """A base for a ``MemoryPort`` without a deep analysis: ``record_validation`` records
    the learnings and nothing else. Subclasses write ``bundle_for`` and
    ``record_learnings``."""

    async def record_learnings(self, learnings: list[ExtractedLearning]) -> None:
        raise NotImplementedError

    async def record_validation(self, *, question: str, connection_id: str, learnings: list[ExtractedLearning],
                                attempts: list[dict[str, Any]], model: ChatModel | None = None) -> None:
        if learnings:
            await self.record_learnings(learnings)
