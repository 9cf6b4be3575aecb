"""The words a semantic model answers to, and the words of a question, normalised alike.

A question is read as a sequence of **senses**. The lexicon holds every phrase the model
knows — metric names and synonyms, dimension names and synonyms, entity names and synonyms
(context words such as "roadshow"), the indexed values of its dimensions ("Epson", "Paris",
"printers", "Ink Bottle 104") — plus the built-in words for time grains, ranking and the verbs
that imply a metric ("sold", "made"). Words are compared folded, without apostrophes, stemmed
(``baton.phrasing``: "cities" = "city", "Pokémon's" = "pokemon"), so one rule reads both sides.

Time and numbers are read before phrases: years ("2025", "FY25"), quarters ("Q3", "third
quarter"), months ("March", "Mar"; "May" only next to a year, else it is the verb), ranges
("from March to June 2025"), numbers ("5", "five"), and relative periods ("last year", "this
quarter", "YTD"), which are marked unknown: the data has no "today" to count from, so they
are asked back, never guessed.

A one-word name or synonym that is also a filler word ("show", "total", "number") is not
added: "Show this as a chart" must not read as a question about shows.

A word that is neither in the lexicon nor a filler word ("what", "show", "the", "total" ...)
is **unknown**, and a question with an unknown word is never answered (``parser.py``).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from baton.phrasing import NUMBER_WORDS, raw_words, stem
from baton.semantic.model import SemanticModel

FILLER = frozenset(
    """a an the of in on at for to from by per each every across all any and or with within during into about as show me give
    list tell display get find see what which who how many much number count be is are was were been being have has had do does
    did can could would will should please i we our my us you your their there this that these those it its total overall sum
    amount figure value data breakdown broken down split let like know look pull up some just also then now thing whole entire
    combined altogether both company business respectively result results value sorted sort ranked rank ordered order
    placed place came come still currently ever got live lives living located based collected charged handled received""".split()
)  # the last two lines: how people say that a counted thing happened ("orders placed", "came from", "customers
# who live in France", "fees collected"): the words that say *which* rows are the model's (values, periods)
GRAIN_WORDS = {
    "day": "day", "daily": "day", "date": "day", "week": "week", "weekly": "week", "month": "month", "monthly": "month",
    "quarter": "quarter", "quarterly": "quarter", "year": "year", "yearly": "year", "annual": "year", "annually": "year",
}
TIME_WORDS = {("over", "time"): None, ("time",): None, ("trend",): None, ("period",): None}
DESC_WORDS = frozenset("top best highest most largest biggest greatest leading max maximum".split())
ASC_WORDS = frozenset("bottom worst lowest least fewest smallest min minimum weakest".split())
VERBS = {"sell": ("sale", "sell", "sold"), "make": ("revenue", "income", "earning"), "earn": ("revenue", "income", "earning"),
         "generate": ("revenue", "income", "earning"), "bring": ("revenue", "income", "earning"), "spend": ("cost", "spend", "expense")}
NEGATIONS = frozenset("not no without except excluding exclude excludes other besides minus".split())
COMPARE = frozenset("vs versus compare compared comparison against".split())
RELATIVE = frozenset("this last next previous current past prior recent latest ytd mtd qtd".split())
MAX_PARTIAL = 200
MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
_NOT_PARTIAL = frozenset(stem(w) for w in (*RELATIVE, *NEGATIONS, *COMPARE, *DESC_WORDS, *ASC_WORDS, *GRAIN_WORDS))  # "last" is no title
_YEAR = re.compile(r"^(?:fy)?((?:19|20)\d\d)$")
_FY_SHORT = re.compile(r"^fy(\d\d)$")


def norm(word: str) -> str:
    return stem(word)


def phrase_of(text: str) -> tuple[str, ...]:
    return tuple(norm(w) for w in raw_words(text))


@dataclass(frozen=True, slots=True)
class Sense:
    """What a span of the question means. ``kind``: metric, dimension, value, entity, grain,
    direction, verb, number, year, quarter, month, range, negation, compare, unknown, filler,
    refused (a metric or dimension the model reads but Baton does not compute: ``value`` is its kind)."""

    kind: str
    name: str = ""  # metric / dimension / entity name, grain, verb
    value: str = ""  # a dimension's value, as stored
    number: int = 0
    extra: tuple = ()  # range: ((kind, n), (kind, n)); value: ("partial",) when part of the value's words
    start: int = 0
    end: int = 0  # exclusive, in question words

    @property
    def text(self) -> str:
        return self.value or self.name or str(self.number)


class Lexicon:
    """Phrase -> senses for one model and its indexed values (immutable once built)."""

    def __init__(self, model: SemanticModel, values: Mapping[str, Iterable[str]] | None = None) -> None:
        self.model = model
        self.phrases: dict[tuple[str, ...], list[Sense]] = {}
        self.partial: dict[str, list[tuple[tuple[str, ...], Sense]]] = {}
        for metric in model.metrics:
            self._add_phrase(phrase_of(metric.name.replace("_", " ")), Sense("metric", metric.name))
            for text in (metric.label, *metric.synonyms):
                self._add(text, Sense("metric", metric.name))
        for dimension in model.dimensions:
            self._add_phrase(phrase_of(dimension.name.replace("_", " ")), Sense("dimension", dimension.name))
            for text in (dimension.label, *dimension.synonyms):
                self._add(text, Sense("dimension", dimension.name))
        for refusal in model.refused:  # read, so a question naming one is refused by name, never read as another
            if refusal.kind in ("metric", "dimension"):
                for text in (refusal.name.replace("_", " "), *refusal.words):
                    self._add(text, Sense("refused", refusal.name, refusal.kind))
        for entity in model.entities:
            for text in (entity.name.replace("_", " "), *entity.synonyms):
                self._add(text, Sense("entity", entity.name))
        for text in model.time_synonyms:
            self._add(text, Sense("grain", ""))
        for words in TIME_WORDS:
            self.phrases.setdefault(tuple(norm(w) for w in words), []).append(Sense("grain", ""))
        for word, grain in GRAIN_WORDS.items():
            self.phrases.setdefault((norm(word),), []).append(Sense("grain", grain))
        for dimension_name, listed in (values or {}).items():
            listed = list(listed)
            partial = len(listed) <= MAX_PARTIAL  # part of a value's words names it only among a few values (not album titles)
            for value in listed:
                words = phrase_of(str(value))
                if not words or all(w.isdigit() for w in words):
                    continue
                sense = Sense("value", dimension_name, str(value))
                self._add_phrase(words, sense)
                for word in set(words) if partial else ():
                    if len(word) >= 4 and not word.isdigit() and word not in FILLER and word not in _NOT_PARTIAL:
                        self.partial.setdefault(word, []).append((words, sense))
        self.longest = max((len(p) for p in self.phrases), default=1)

    def _add(self, text: str, sense: Sense) -> None:
        words = phrase_of(text) if text else ()
        if len(words) == 1 and words[0] in FILLER:
            return  # "show", "total", "count": a synonym must not turn a filler word into a metric (a
            # metric or dimension *named* so, e.g. `orders`, is meant: its name is always a phrase)
        self._add_phrase(words, sense)

    def _add_phrase(self, words: tuple[str, ...], sense: Sense) -> None:
        if not words:
            return
        bucket = self.phrases.setdefault(words, [])
        if sense not in bucket:
            bucket.append(sense)

    def words_of(self, kind: str, name: str) -> list[tuple[str, ...]]:
        return [p for p, senses in self.phrases.items() if any(s.kind == kind and s.name == name for s in senses)]


def time_senses(words: list[str]) -> dict[int, list[Sense]]:
    """Senses for years, quarters, months, ranges, numbers and relative periods, by start."""
    found: dict[int, list[Sense]] = {}

    def add(sense: Sense) -> None:
        found.setdefault(sense.start, []).append(sense)

    def year_at(i: int) -> int | None:
        if 0 <= i < len(words):
            m = _YEAR.match(words[i])
            if m:
                return int(m.group(1))
            short = _FY_SHORT.match(words[i])
            if short:
                return 2000 + int(short.group(1))
        return None

    def period_at(i: int) -> tuple[str, int, int] | None:
        """(kind, number, words used) for a month or quarter starting at ``i``."""
        if i >= len(words):
            return None
        w = words[i]
        if re.fullmatch(r"q[1-4]", w):
            return "quarter", int(w[1]), 1
        if w in ORDINALS and i + 1 < len(words) and norm(words[i + 1]) == "quarter":
            return "quarter", ORDINALS[w], 2
        if w in MONTHS and (w != "may" or year_at(i + 1) is not None or year_at(i - 1) is not None):
            return "month", MONTHS[w], 1
        return None

    i = 0
    while i < len(words):
        w = words[i]
        year = year_at(i)
        if year is not None:
            add(Sense("year", number=year, start=i, end=i + 1))
            i += 1
            continue
        if w in ("between", "from"):
            first = period_at(i + 1)
            if first is not None:
                j = i + 1 + first[2]
                if j < len(words) and words[j] in ("and", "to", "through", "until", "till"):
                    second = period_at(j + 1)
                    if second is not None and second[0] == first[0]:
                        add(Sense("range", first[0], extra=((first[0], first[1]), (second[0], second[1])), start=i,
                                  end=j + 1 + second[2]))
                        i = j + 1 + second[2]
                        continue
        period = period_at(i)
        if period is not None:
            add(Sense(period[0], period[0], number=period[1], start=i, end=i + period[2]))
            i += period[2]
            continue
        if w in RELATIVE and (w in ("ytd", "mtd", "qtd", "recent", "latest") or
                              (i + 1 < len(words) and (norm(words[i + 1]) in GRAIN_WORDS or words[i + 1].startswith("fy")))):
            end = i + 1 if w in ("ytd", "mtd", "qtd", "recent", "latest") else i + 2
            add(Sense("relative", " ".join(words[i:end]), start=i, end=end))
            i = end
            continue
        if (w, words[i + 1] if i + 1 < len(words) else "") in (("to", "date"), ("so", "far")):
            add(Sense("relative", f"{w} {words[i + 1]}", start=i, end=i + 2))
            i += 2
            continue
        if w.isdigit() or w in NUMBER_WORDS:
            add(Sense("number", number=int(w) if w.isdigit() else NUMBER_WORDS[w], start=i, end=i + 1))
        i += 1
    return found


__all__ = ["ASC_WORDS", "COMPARE", "DESC_WORDS", "FILLER", "Lexicon", "NEGATIONS", "Sense", "VERBS", "norm", "phrase_of", "time_senses"]
