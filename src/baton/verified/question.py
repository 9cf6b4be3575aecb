"""A verified question: a question a person checked, the SQL that answers it, who answers
it, and the slots (the parts that may vary). Matching a new question to one is
``baton.verified.matching``; reading its SQL and binding slot values into it is
``baton.verified.sql``. This module holds only the records both of them use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from baton.phrasing import Vocabulary

SLOT_KINDS = ("year", "limit", "choice")
MAX_LIMIT = 1000
_SAFE_CHOICE = re.compile(r"^[A-Za-z0-9 _.\-]{1,64}\Z")


class SlotError(ValueError):
    """A slot that cannot be bound to its verified question's SQL (or a bad slot value)."""


@dataclass(frozen=True, slots=True)
class Slot:
    """A part of a verified question that may vary (module docstring)."""

    name: str
    kind: str = "year"
    default: str = ""
    column: str = ""
    choices: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in SLOT_KINDS:
            raise SlotError(f"unknown slot kind {self.kind!r}; expected one of {SLOT_KINDS}")
        if self.kind == "year" and not re.fullmatch(r"(19|20)\d\d", self.default):
            raise SlotError(f"a year slot needs the question's year as its default, got {self.default!r}")
        if self.kind == "choice":
            if not self.column or not self.choices:
                raise SlotError("a choice slot needs a column and its choices")
            for word, literal in self.choices:
                if not _SAFE_CHOICE.match(word) or not _SAFE_CHOICE.match(literal):
                    raise SlotError(f"choice {word!r} -> {literal!r}: letters, digits, spaces, '_', '.', '-' only")

    def to_dict(self) -> dict:
        out: dict = {"name": self.name, "kind": self.kind}
        if self.default:
            out["default"] = self.default
        if self.column:
            out["column"] = self.column
        if self.choices:
            out["choices"] = dict(self.choices)
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> Slot:
        return cls(str(data["name"]), str(data.get("kind", "year")), str(data.get("default", "")),
                   str(data.get("column", "")), tuple((str(k), str(v)) for k, v in dict(data.get("choices") or {}).items()))


@dataclass(frozen=True, slots=True)
class VerifiedQuestion:
    """A question a person checked, with the SQL that answers it and who answers it.

    ``vocabulary``: how the workspace it belongs to normalises questions (synonyms from
    its schema and documents); ``source``/``record_id``: where it was stored (memory).
    A bound copy (``find_verified``) has ``template`` and ``bindings`` set."""

    question: str
    sql: str
    agent: str = ""
    connection_id: str = ""
    slots: tuple[Slot, ...] = ()
    source: str = ""
    record_id: str = ""
    template: str = ""
    bindings: tuple[tuple[str, str], ...] = ()
    vocabulary: Vocabulary | None = field(default=None, compare=False, repr=False)

    @property
    def checked_question(self) -> str:
        """The question as the person checked it (a bound copy's template)."""
        return self.template or self.question


__all__ = ["MAX_LIMIT", "SLOT_KINDS", "Slot", "SlotError", "VerifiedQuestion"]
