"""Matching a question to a verified question, for the LLM-free fast path.

A verified question carries SQL a person checked; answering a new question with it is only
safe when the two ask the SAME thing. Character similarity is not that: "Epson revenue by
month" and "Pokemon revenue by month" are 90 % alike and ask different things. So the rule
is on content words: after lower-casing, dropping punctuation, stop words and filler
("please", "show me", ...), and a crude plural strip, the two questions must have exactly
the same set of words. Word order, politeness and punctuation may differ; a different unit,
year, metric or entity never matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

_FILLER = frozenset(
    "a an and are as at be by can could did do does for from give how i in into is it its list me "
    "my of on or our please show tell that the their there this to us was we were what whats which "
    "who would you".split()
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class VerifiedQuestion:
    """A question a person checked, with the SQL that answers it and who answers it."""

    question: str
    sql: str
    agent: str = ""
    connection_id: str = ""


def content_words(text: str, stop_words: frozenset[str] = _FILLER) -> frozenset[str]:
    """Lower-cased words of ``text`` minus ``stop_words``, with a crude plural strip."""
    words = set()
    for word in _WORD.findall(text.lower()):
        if word in stop_words:
            continue
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(words)


def same_question(a: str, b: str) -> bool:
    wa, wb = content_words(a), content_words(b)
    return bool(wa) and wa == wb


def find_verified(question: str, candidates: Iterable[VerifiedQuestion]) -> VerifiedQuestion | None:
    """The verified question asking the same thing as ``question``, if any."""
    wanted = content_words(question)
    if not wanted:
        return None
    return next((c for c in candidates if content_words(c.question) == wanted), None)


def examples_by_agent(verified: Sequence[VerifiedQuestion]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for v in verified:
        grouped.setdefault(v.agent, []).append(v.question)
    return grouped
