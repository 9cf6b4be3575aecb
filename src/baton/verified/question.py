"""A verified question: a question a person checked, the SQL that answers it, who answers
it, and the slots (the parts that may vary). Matching a new question to one is
``baton.verified.matching``; reading its SQL and binding slot values into it is
``baton.verified.sql``. This module holds only the records both of them use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from baton.phrasing import DEFAULT_VOCABULARY, Vocabulary

SLOT_KINDS = ("year", "limit", "choice")
MAX_LIMIT = 1000
MAX_CHOICES = 50
_SAFE_CHOICE = re.compile(r"^[A-Za-z0-9 _.\-]{1,64}\Z")
_CHOICE_WORD = re.compile(r"^[A-Za-z0-9]{1,64}\Z")  # one word of a question: matching binds one token
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")  # one identifier token: what ``bind_choice`` compares


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
            self._check_choices()

    def _check_choices(self) -> None:
        if not self.column or not self.choices:
            raise SlotError("a choice slot needs a column and its choices")
        if not _COLUMN.match(self.column):
            raise SlotError(f"choice slot column {self.column!r}: one column name (letters, digits, '_'), without its table")
        if len(self.choices) > MAX_CHOICES:
            raise SlotError(f"a choice slot has at most {MAX_CHOICES} choices, got {len(self.choices)}")
        seen: dict[str, str] = {}
        for word, literal in self.choices:
            if not _CHOICE_WORD.match(word):
                raise SlotError(f"choice word {word!r}: one word of letters and digits")
            if not _SAFE_CHOICE.match(literal):
                raise SlotError(f"choice {word!r} -> {literal!r}: letters, digits, spaces, '_', '.', '-' only")
            key = DEFAULT_VOCABULARY.canonical(word.lower())  # "Epson" and "epsons" are one word to matching
            if key in seen:
                raise SlotError(f"choice {word!r} repeats {seen[key]!r}")
            seen[key] = word
        if self.default not in dict(self.choices):
            raise SlotError(f"a choice slot's default {self.default!r} must be one of its choices")

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


__all__ = ["MAX_CHOICES", "MAX_LIMIT", "SLOT_KINDS", "Slot", "SlotError", "VerifiedQuestion"]
