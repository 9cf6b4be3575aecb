"""Matching a question to a verified question, for the LLM-free fast path.

A verified question carries SQL a person checked; answering a new question with it is only
safe when the two ask the SAME thing. Character similarity is not that: "Epson revenue by
month" and "Pokemon revenue by month" are 90 % alike and ask different things. So the rule
is on normalised words (``baton.phrasing``: case, accents, apostrophes, plurals, stop words,
synonyms such as sales/revenue, per/by, monthly/by month, best-selling/top):

- **required**: every word of the verified question must be in the new question ("sold
  the most" needs "most"; "Pokemon" needs "Pokemon"), except that a verb of the measure
  ("sold") is also satisfied by naming the measure itself ("highest revenue") or by the
  ranking alone ("top products");
- **allowed**: every word of the new question must be in the verified question or be
  implied by its SQL: the names of the columns it returns, the words of the table it reads
  when it reads exactly one (not its time words: ``monthly_revenue`` does not make "by
  month" implied; a join's tables may only feed a derived measure, so they imply nothing),
  and the direction of its ranking (``ORDER BY <measure> DESC`` allows "most", ``ASC`` allows "least").

So "least" against a question ranked DESC, "cost" against "revenue", "customers" against
"products", another year, another unit or an extra word ("average", "growth", "not") never
match: those questions differ in meaning and get no verified rows.

**Slots.** A verified question may declare slots: the part of it that may vary, bound to the
SQL's literals by their position in the SQL's tokens (never by text substitution in the
SQL source as a whole):

- ``year``: the question's year (its ``default``, "2025") may be any year; every year
  literal in the SQL within one year of the default moves by the same offset, so a range
  ``'2025-01-01'..'2026-01-01'`` moves as one, and ``LIKE '2025-%'`` becomes ``'2024-%'``;
- ``limit``: "top 3" adds (or replaces) the outermost ``LIMIT``; without a number the SQL
  runs as checked;
- ``choice``: a word from a fixed list (``choices``: word -> SQL literal) replaces the
  literal compared with ``column`` (``unit_id = 1`` -> ``unit_id = 2`` for "Epson").

A bound copy's ``question`` names what was bound ("... in 2024"), ``template`` the
question as it was checked. The bound SQL goes through the same safety check, pre-
validation and read-only engine as any other (the SQL agent runs it like the original).
Without a declared slot, another year is another question.

Decisions: among several matches the most specific wins (most required words); two equally
specific matches with different SQL match nothing (ambiguity is not an answer).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from baton.phrasing import DEFAULT_VOCABULARY, NUMBER, TIME_WORDS, WORD, YEAR, Token, Vocabulary, raw_words
from baton.verified.question import MAX_LIMIT, Slot, SlotError, VerifiedQuestion
from baton.verified.sql import bind, sql_terms

_FILLER = frozenset(
    "a an and are as at be by can could did do does for from give how i in into is it its list me "
    "my of on or our please show tell that the their there this to us was we were what whats which "
    "who would you".split()
)
_WORD = re.compile(r"[a-z0-9]+")
MEASURE_VERBS = frozenset({"sell", "earn", "make", "generate", "spend"})


# --- the old word-set helpers (still used for keys and routing) ---------------------------------


def content_words(text: str, stop_words: frozenset[str] = _FILLER) -> frozenset[str]:
    """Lower-cased words of ``text`` minus ``stop_words``, with a crude plural strip."""
    words = set()
    for word in _WORD.findall(text.lower()):
        if word in stop_words:
            continue
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(words)


def same_question(a: str, b: str, vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> bool:
    """True when ``a`` and ``b`` have the same normalised words (no SQL considered)."""
    wa, wb = vocabulary.keys(a), vocabulary.keys(b)
    return bool(wa) and wa == wb


def examples_by_agent(verified: Sequence[VerifiedQuestion]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for v in verified:
        grouped.setdefault(v.agent, []).append(v.question)
    return grouped


# --- what a verified question requires and allows --------------------------------------------


@dataclass(frozen=True, slots=True)
class _Profile:
    required: frozenset[str]
    allowed: frozenset[str]
    measures: frozenset[str]
    direction: str | None


def _marker(slot: Slot) -> str:
    return f"<slot:{slot.name}>"


def _choice_words(slot: Slot, vocabulary: Vocabulary) -> dict[str, str]:
    """Canonical question word -> the choice's own word."""
    return {vocabulary.canonical(w): word for word, _ in slot.choices for w in raw_words(word)[:1]}


@functools.lru_cache(maxsize=4096)
def _profile(question: str, sql: str, slots: tuple[Slot, ...], vocabulary: Vocabulary) -> _Profile:
    keys: set[str] = set()
    for token in vocabulary.tokens(question):
        slot = next((s for s in slots if (s.kind == "year" and token.kind == YEAR and token.text == s.default)
                     or (s.kind == "choice" and token.kind == WORD and token.text == vocabulary.canonical(s.default.lower()))), None)
        keys.add(_marker(slot) if slot else token.key)
    outputs, tables, measures, direction = sql_terms(sql)
    implied = {vocabulary.canonical(w) for name in outputs for w in raw_words(name)}
    if len(tables) == 1:  # "tickets sold at roadshow events": the one table read says what is counted
        implied |= {vocabulary.canonical(w) for w in raw_words(tables[0])} - TIME_WORDS
    if direction:
        implied.add(direction)
    implied |= {_marker(s) for s in slots if s.kind == "limit"}
    measure_words = frozenset(vocabulary.canonical(w) for name in measures for w in raw_words(name))
    return _Profile(frozenset(keys), frozenset(keys | implied), measure_words, direction)


def _bind_question(tokens: list[Token], candidate: VerifiedQuestion, vocabulary: Vocabulary) -> tuple[frozenset[str], dict[str, str]] | None:
    """The question's keys with the candidate's slot values replaced by markers, and the
    values bound; None when a slot is ambiguous (two years for one year slot)."""
    keys = [t.key for t in tokens]
    bound: dict[str, str] = {}
    for slot in candidate.slots:
        if slot.kind == "year":
            found = [i for i, t in enumerate(tokens) if t.kind == YEAR]
            if len(found) > 1:
                return None
            if found:
                bound[slot.name] = tokens[found[0]].text
                keys[found[0]] = _marker(slot)
        elif slot.kind == "limit":
            found = [i for i, t in enumerate(tokens) if t.kind == NUMBER]
            if len(found) > 1:
                return None
            if found:
                value = int(tokens[found[0]].text)
                if not 1 <= value <= MAX_LIMIT:
                    return None
                bound[slot.name] = str(value)
                keys[found[0]] = _marker(slot)
        else:
            words = _choice_words(slot, vocabulary)
            found = [i for i, t in enumerate(tokens) if t.kind == WORD and t.text in words]
            if len(found) > 1:
                return None
            if found:
                bound[slot.name] = words[tokens[found[0]].text]
                keys[found[0]] = _marker(slot)
    return frozenset(keys), bound


def _vocabulary(candidate: VerifiedQuestion) -> Vocabulary:
    return candidate.vocabulary or DEFAULT_VOCABULARY


def _asks_same(asked: frozenset[str], profile: _Profile) -> bool:
    missing = profile.required - asked
    # a verb of the measure ("sold the most") is also said by naming the measure ("highest
    # revenue"), or by ranking without naming any measure ("top products": every word of
    # the question must still be allowed, so "top products by cost" stays another question)
    said = bool(asked & profile.measures) or (profile.direction is not None and profile.direction in asked)
    unsaid = {w for w in missing if not (w in MEASURE_VERBS and said)}
    return not unsaid and asked <= profile.allowed


@dataclass(frozen=True, slots=True)
class Match:
    verified: VerifiedQuestion  # bound copy when slots were bound
    specificity: int


def match_verified(question: str, candidates: Iterable[VerifiedQuestion]) -> Match | None:
    """The verified question asking the same thing as ``question`` (module docstring), bound."""
    best: list[tuple[int, VerifiedQuestion, dict[str, str]]] = []
    for candidate in candidates:
        vocabulary = _vocabulary(candidate)
        tokens = vocabulary.tokens(question)  # read once per vocabulary: it remembers
        if not tokens:
            continue
        bound = _bind_question(tokens, candidate, vocabulary)
        if bound is None:
            continue
        asked, values = bound
        profile = _profile(candidate.question, candidate.sql, candidate.slots, vocabulary)
        if _asks_same(asked, profile):
            best.append((len(profile.required), candidate, values))
    if not best:
        return None
    best.sort(key=lambda b: -b[0])
    top = [b for b in best if b[0] == best[0][0]]
    if len({(b[1].sql, b[1].agent, tuple(sorted(b[2].items()))) for b in top}) > 1:
        return None  # equally specific and different: ambiguous
    specificity, candidate, values = top[0]
    return Match(bind(candidate, values) if values else candidate, specificity)


def find_verified(question: str, candidates: Iterable[VerifiedQuestion]) -> VerifiedQuestion | None:
    """The verified question asking the same thing as ``question``, bound to its slots."""
    try:
        found = match_verified(question, candidates)
    except SlotError:
        return None
    return found.verified if found else None


def closest_verified(question: str, candidates: Sequence[VerifiedQuestion], k: int = 3) -> list[tuple[float, VerifiedQuestion]]:
    """The ``k`` verified questions nearest to ``question`` by shared words (0..1, best
    first); for "Did you mean ...?". Slot values count as shared ("2024" near a question
    with a year slot). Ties keep the candidates' order."""
    scored = []
    for position, candidate in enumerate(candidates):
        vocabulary = _vocabulary(candidate)
        tokens = vocabulary.tokens(question)  # read once per vocabulary: it remembers
        bound = _bind_question(tokens, candidate, vocabulary) or (frozenset(t.key for t in tokens), {})
        asked = bound[0]
        profile = _profile(candidate.question, candidate.sql, candidate.slots, vocabulary)
        if not asked or not profile.required:
            scored.append((0.0, position, candidate))
            continue
        shared = sum(_weight(w) for w in asked & profile.allowed)
        score = shared / math.sqrt(sum(map(_weight, asked)) * sum(map(_weight, profile.required)))
        scored.append((round(min(score, 1.0), 4), position, candidate))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [(s, c) for s, _, c in scored[:k]]


def _weight(key: str) -> float:
    return 2.0 if key.startswith("<") else 1.0


def with_vocabulary(verified: Iterable[VerifiedQuestion], vocabulary: Vocabulary) -> tuple[VerifiedQuestion, ...]:
    """The same verified questions read with ``vocabulary``."""
    return tuple(replace(v, vocabulary=vocabulary) for v in verified)


__all__ = [
    "MEASURE_VERBS", "Match", "closest_verified", "content_words", "examples_by_agent", "find_verified",
    "match_verified", "same_question", "with_vocabulary",
]
