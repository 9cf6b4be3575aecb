"""The contradiction gate (seed 002 "Conflict Resolution Pattern").

Similarity proposes; the gate disposes. ``contradiction_gate`` reads only the structured
fields (entity, attribute, scope, value) and returns one of four verdicts; ``apply_verdict``
turns a verdict into an ``Action`` the store executes atomically. Keyword heuristics
(``keyword_flags``: negation flips, always/never pairs) may FLAG a pair for review; they
never decide anything.

Decisions:
- Scopes are "/" paths. They overlap when equal or when the NEW scope is an ancestor of
  the old one (a broader correction covers the narrower statement). A narrower or sibling
  correction coexists: it wins only in its own scope.
- Values are compatible when their normalized forms are equal. When NEITHER statement has
  a value (no structured position: e.g. a lesson from the deep LLM analysis), the gate
  cannot know whether they agree, so it never reinforces on a guess: the same statement
  (equal normalized text) corroborates, anything else coexists (both live, nothing
  merged, nothing retired). Treating None == None as agreement let "Always filter
  deleted_at" corroborate "Never filter deleted_at" and drop the newer text.
- Independence (``independent``): the new provenance key (session, agent, outcome, user)
  is not among the keys that already back the record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from baton.memory.model import Provenance, normalize_key, normalize_scope, normalize_text, normalize_value


class Verdict(StrEnum):
    UNRELATED = "unrelated"
    COEXIST = "coexist"
    CORROBORATES = "corroborates"
    CONTRADICTS = "contradicts"


class Statement(Protocol):
    """What the gate compares (read only: drafts, records and frozen rows all qualify)."""

    @property
    def entity(self) -> str: ...
    @property
    def attribute(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def value(self) -> Any: ...


def scopes_overlap(old_scope: str, new_scope: str) -> bool:
    old, new = normalize_scope(old_scope), normalize_scope(new_scope)
    return old == new or old.startswith(new + "/")


def values_compatible(old_value: Any, new_value: Any) -> bool:
    return normalize_value(old_value) == normalize_value(new_value)


def contradiction_gate(old: Statement, new: Statement) -> Verdict:
    if (normalize_key(old.entity), normalize_key(old.attribute)) != (normalize_key(new.entity), normalize_key(new.attribute)):
        return Verdict.UNRELATED  # similarity alone never merges anything
    if not scopes_overlap(old.scope, new.scope):
        return Verdict.COEXIST
    if normalize_value(old.value) is None and normalize_value(new.value) is None:
        return Verdict.CORROBORATES if _same_text(old, new) else Verdict.COEXIST
    if values_compatible(old.value, new.value):
        return Verdict.CORROBORATES
    return Verdict.CONTRADICTS


def _same_text(old: Any, new: Any) -> bool:
    """Equal normalized text; statements that carry no text at all count as the same."""
    old_text, new_text = getattr(old, "text", None), getattr(new, "text", None)
    if old_text is None or new_text is None:
        return True
    return normalize_text(old_text) == normalize_text(new_text)


def independent(prior: Iterable[Provenance], new: Provenance) -> bool:
    return new.key() not in {p.key() for p in prior}


@dataclass(frozen=True, slots=True)
class Action:
    """What the store must do for one (old, new) pair.

    ``kind``: ``create`` (new record, old untouched), ``supersede`` (old inactive with
    ``superseded_by`` = the new record, new created; one atomic append), ``corroborate``
    (old +step, provenance appended; nothing created) or ``unchanged`` (self-repetition:
    nothing at all)."""

    kind: str
    old_id: str | None = None


def apply_verdict(verdict: Verdict, old: Any, new_provenance: Provenance) -> Action:
    """The seed's ``apply_verdict`` as a pure decision; ``old`` has ``id`` and ``provenance``."""
    if verdict is Verdict.CONTRADICTS:
        return Action("supersede", old.id)
    if verdict is Verdict.CORROBORATES:
        if independent(old.provenance, new_provenance):
            return Action("corroborate", old.id)
        return Action("unchanged", old.id)
    return Action("create", old.id)


_NEGATIONS = {"no", "not", "never", "dont", "don't", "do not", "cannot", "can't", "without", "avoid", "stop"}
_WORD = re.compile(r"[a-z0-9']+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def keyword_flags(old_text: str, new_text: str) -> tuple[str, ...]:
    """Reasons a human might look at this pair; informational only (see module docstring)."""
    old_w, new_w = _words(old_text), _words(new_text)
    flags = []
    if bool(old_w & _NEGATIONS) != bool(new_w & _NEGATIONS) and (old_w & new_w) - _NEGATIONS:
        flags.append("negation-flip")
    if ({"always", "never"} <= (old_w | new_w)) and not ({"always", "never"} <= old_w or {"always", "never"} <= new_w):
        flags.append("always-never")
    old_nums, new_nums = set(re.findall(r"\d+(?:\.\d+)?", old_text)), set(re.findall(r"\d+(?:\.\d+)?", new_text))
    if old_nums and new_nums and old_nums != new_nums:
        flags.append("number-change")
    return tuple(flags)
