"""``VerifiedSet``: the one set of a workspace's verified questions, shared by reference.

The orchestrator's fast path, the no-model router's "Did you mean" and each SQL specialist's
own questions used to be three copies, assigned together on every change. Now each of them
holds the same ``VerifiedSet`` (the workspace's ``Catalog`` hands it out) and reads it when a
question comes: one attribute read, the per-specialist subsets computed once per change, not
per question.

A change replaces the whole state in one assignment, so a running request keeps the tuple it
read and never sees half of a change. A set created on its own (an agent built outside a
workspace, ``SQLAgent(verified=[...])``) works the same way, unshared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from baton.verified.question import VerifiedQuestion


class VerifiedSet:
    """The verified questions (``questions``) and, per owning specialist, its own (``of``)."""

    __slots__ = ("_state",)

    def __init__(self, questions: Iterable[VerifiedQuestion] = ()) -> None:
        self._state: tuple[tuple[VerifiedQuestion, ...], dict[str, tuple[VerifiedQuestion, ...]]] = ((), {})
        self.replace(questions)

    def replace(self, questions: Iterable[VerifiedQuestion]) -> tuple[VerifiedQuestion, ...]:
        """Make ``questions`` the set (one assignment); returns them as a tuple."""
        every = tuple(questions)
        owned: dict[str, list[VerifiedQuestion]] = {}
        for question in every:
            owned.setdefault(question.agent, []).append(question)
        self._state = (every, {agent: tuple(mine) for agent, mine in owned.items()})
        return every

    @property
    def questions(self) -> tuple[VerifiedQuestion, ...]:
        return self._state[0]

    def of(self, agent: str | None) -> tuple[VerifiedQuestion, ...]:
        """The questions ``agent`` owns (every question for ``None``)."""
        every, owned = self._state
        return every if agent is None else owned.get(agent, ())

    def __iter__(self) -> Iterator[VerifiedQuestion]:
        return iter(self._state[0])

    def __len__(self) -> int:
        return len(self._state[0])

    def __bool__(self) -> bool:
        return bool(self._state[0])

    def __repr__(self) -> str:
        return f"VerifiedSet({len(self)} questions)"


__all__ = ["VerifiedSet"]
