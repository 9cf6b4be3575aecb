"""The words of a question, normalised so that two phrasings of one question compare equal.

Verified-question matching, the no-model router and the document probe all read questions
through ``Vocabulary.tokens``: one normaliser, so what one of them calls "the same words"
the others do too.

Normalisation, in order:

1. Unicode compatibility form with accents dropped ("Pokémon" -> "pokemon"), lower case.
2. Apostrophes and possessives dropped ("Pokemon's", "cities'", "what's" -> "pokemon",
   "cities", "what"); hyphens split words ("best-selling" -> "best selling").
3. Years ("2025", "FY2025", "FY25") become ``year`` tokens, numbers (digits, or "one" to
   "twenty") ``number`` tokens; month names stay words (they change what is asked).
4. Phrases are replaced longest first ("best selling" -> "most sell", "business unit" ->
   "unit", "month by month" -> "month").
5. Each word is stemmed (irregular forms, then plurals: "cities" -> "city", "sold" ->
   "sell") and mapped to its canonical synonym ("sales" -> "revenue", "top" -> "most").
6. Stop words (question words, articles, "show me", "per", "by", "each", "total" ...) are
   dropped; a word naming the type of the entity just before it is dropped too
   ("Pokemon business unit" -> "pokemon", when "Pokemon" is a business unit's name).

Decisions:

- Built-in synonyms are generic business English only (revenue/sales/turnover, cost/expense,
  top/best/highest -> most, least/lowest/bottom -> least, monthly -> month ...); no word of
  any one workspace is built in. A workspace adds its own from its schema (entity names and
  their type words, ``from_schema``) and its documents: a glossary or doctrine section
  with an ``Also called: a, b`` line makes ``a`` and ``b`` synonyms of the section's
  heading (``from_markdown``).
- Negations and qualifiers ("not", "only", "without", "average", "growth", "vs") are never
  stop words: dropping them would make different questions look alike. A word the
  vocabulary does not know is kept as is, so an unknown word always counts.
- The stemmer is deliberately small (irregular verbs, plural endings, "-ly" of time units):
  applied to both sides it only has to be consistent, and a small one is explainable.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

YEAR, NUMBER, WORD = "year", "number", "word"

STOP_WORDS = frozenset(
    """a an the of in on at for to from by per each every across all any and with within during over into about
    as show me give list tell display get find see what which who whom how many much number count did do does is
    are was were be been being has have had can could would will should shall may might please i we our my us you
    your their there this that these those it its total overall sum amount figure value data breakdown broken
    down split make generate earn bring want like know look let pull up some just also then now thing""".split()
)
# Words that change what is asked: never stop words, even where a list elsewhere has them.
MEANINGFUL = frozenset("not no without except excluding only than between vs versus compared average mean median growth "
                       "change share percent percentage last previous next first".split())

IRREGULAR = {
    "sold": "sell", "sells": "sell", "selling": "sell", "made": "make", "makes": "make", "making": "make",
    "bought": "buy", "buying": "buy", "spent": "spend", "spending": "spend", "earned": "earn", "earning": "earn",
    "generated": "generate", "brought": "bring", "got": "get", "gave": "give", "had": "have", "has": "have",
    "did": "do", "does": "do", "done": "do", "was": "be", "were": "be", "is": "be", "are": "be", "been": "be",
    "people": "person", "children": "child", "men": "man", "women": "woman", "data": "data", "news": "news",
    "series": "series", "analysis": "analysis", "sales": "sale", "cancelled": "cancel", "canceled": "cancel",
    "cancellation": "cancel", "cancellations": "cancel", "handled": "handle", "handling": "handle",
    "defined": "define", "definition": "define", "counted": "count", "counts": "count", "counting": "count",
    "profitable": "profit", "profits": "profit", "tickets": "ticket",
}
SYNONYMS = {
    # measures
    "sale": "revenue", "turnover": "revenue", "takings": "revenue", "revenues": "revenue",
    "expense": "cost", "expenditure": "cost", "spend": "cost", "outgoing": "cost",
    # direction
    "top": "most", "best": "most", "highest": "most", "biggest": "most", "largest": "most", "greatest": "most",
    "leading": "most", "max": "most", "maximum": "most", "more": "most", "higher": "most",
    "lowest": "least", "bottom": "least", "worst": "least", "smallest": "least", "fewest": "least", "min": "least",
    "minimum": "least", "weakest": "least", "less": "least", "lower": "least", "fewer": "least",
    "popular": "sell",
    # time
    "monthly": "month", "mo": "month", "quarterly": "quarter", "qtr": "quarter", "yearly": "year", "annual": "year",
    "annually": "year", "weekly": "week", "daily": "day",
    # dimensions
    "town": "city", "item": "product", "sku": "product", "client": "customer", "buyer": "customer",
    "division": "unit", "segment": "unit", "bu": "unit", "department": "unit", "type": "category",
    "admission": "ticket",
}
PHRASES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("best", "selling"): ("most", "sell"), ("top", "selling"): ("most", "sell"), ("most", "selling"): ("most", "sell"),
    ("worst", "selling"): ("least", "sell"), ("least", "selling"): ("least", "sell"),
    ("business", "unit"): ("unit",), ("business", "units"): ("unit",), ("product", "line"): ("product",),
    ("product", "lines"): ("product",), ("month", "by", "month"): ("month",), ("year", "by", "year"): ("year",),
    ("quarter", "by", "quarter"): ("quarter",), ("top", "line"): ("revenue",), ("how", "much"): (),
    ("how", "many"): (), ("number", "of"): (), ("break", "down"): (), ("broken", "down"): (),
    ("compared", "to"): ("vs",), ("compared", "with"): ("vs",), ("fiscal", "year"): ("year",),
}
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty".split())}
TIME_WORDS = frozenset("year quarter month week day date time hour minute".split())

_RAW = re.compile(r"fy\s?\d{2,4}|[a-z0-9]+(?:['’ʼ`][a-z]+)?|['’ʼ`]")
_YEAR = re.compile(r"(?:19|20)\d\d")
_FY = re.compile(r"fy\s?(\d{2}|\d{4})")


@dataclass(frozen=True, slots=True)
class Token:
    """One normalised word of a question: ``kind`` is ``word``, ``year`` or ``number``."""

    text: str
    kind: str = WORD

    @property
    def key(self) -> str:
        """What set comparisons use: the word itself, or ``<year>2025`` / ``<number>3``."""
        return self.text if self.kind == WORD else f"<{self.kind}>{self.text}"


def fold(text: str) -> str:
    """Lower case without accents or compatibility forms ("Pokémon" -> "pokemon")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def stem(word: str) -> str:
    """Irregular forms first, then plural endings (a deliberately small stemmer)."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ys")):
        return word[:-1]
    return word


def raw_words(text: str) -> list[str]:
    """Folded words with apostrophes and possessives dropped; hyphens split words."""
    out = []
    for match in _RAW.finditer(fold(text).replace("-", " ").replace("_", " ")):
        word = match.group(0)
        if word[0] in "'’ʼ`":
            continue
        word = re.split(r"['’ʼ`]", word)[0]
        if word:
            out.append(word)
    return out


_RECENT_TEXTS = 256  # questions whose tokens a vocabulary remembers (Vocabulary.tokens)


class Vocabulary:
    """Synonyms, phrases and entity names: how one workspace's questions are normalised.

    Immutable after construction (``merged`` returns a new one), so it may be shared by
    concurrent requests; hashed by identity (matching caches per vocabulary)."""

    def __init__(self, synonyms: Mapping[str, str] | None = None, phrases: Mapping[tuple[str, ...], Sequence[str]] | None = None,
                 entities: Mapping[str, Iterable[str]] | None = None) -> None:
        self.synonyms: dict[str, str] = {**SYNONYMS, **{stem(fold(k)): v for k, v in (synonyms or {}).items()}}
        self.phrases: dict[tuple[str, ...], tuple[str, ...]] = {**PHRASES}
        for words, canonical in (phrases or {}).items():
            self.phrases[tuple(words)] = tuple(canonical)
        # entity word -> words that name its type ("pokemon" -> {"unit", "business"})
        self.entities: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in (entities or {}).items()}
        self._longest = max((len(p) for p in self.phrases), default=1)
        self._recent: dict[tuple[str, bool], tuple[Token, ...]] = {}

    def merged(self, other: Vocabulary) -> Vocabulary:
        """A vocabulary knowing both (``other`` wins on conflicts)."""
        merged = Vocabulary()
        merged.synonyms = {**self.synonyms, **other.synonyms}
        merged.phrases = {**self.phrases, **other.phrases}
        merged.entities = {**self.entities}
        for word, types in other.entities.items():
            merged.entities[word] = merged.entities.get(word, frozenset()) | types
        merged._longest = max((len(p) for p in merged.phrases), default=1)
        return merged

    def canonical(self, word: str) -> str:
        stemmed = stem(word)
        return self.synonyms.get(stemmed, self.synonyms.get(word, stemmed))

    def tokens(self, text: str, *, keep_stop_words: bool = False) -> list[Token]:
        """The normalised tokens of ``text`` (module docstring), in order. The last few
        texts' tokens are remembered: one question is read by the orchestrator's verified
        match and again by the specialist's (the vocabulary never changes, so they hold)."""
        known = self._recent.get((text, keep_stop_words))
        if known is not None:
            return list(known)
        tokens = self._tokens(text, keep_stop_words)
        if len(self._recent) >= _RECENT_TEXTS:
            self._recent.clear()
        self._recent[(text, keep_stop_words)] = tuple(tokens)
        return tokens

    def _tokens(self, text: str, keep_stop_words: bool) -> list[Token]:
        words = raw_words(text)
        out: list[Token] = []
        i = 0
        while i < len(words):
            for size in range(min(self._longest, len(words) - i), 0, -1):
                replacement = self.phrases.get(tuple(words[i:i + size]))
                if replacement is not None:
                    out.extend(Token(w) for w in replacement)
                    i += size
                    break
            else:
                out.append(self._token(words[i]))
                i += 1
        if keep_stop_words:
            return out
        return self._without_type_words([t for t in out if t.kind != WORD or t.text in MEANINGFUL or t.text not in STOP_WORDS])

    def _token(self, word: str) -> Token:
        if m := _FY.fullmatch(word):
            digits = m.group(1)
            return Token(digits if len(digits) == 4 else f"20{digits}", YEAR)
        if _YEAR.fullmatch(word):
            return Token(word, YEAR)
        if word.isdigit():
            return Token(str(int(word)), NUMBER)
        if word in NUMBER_WORDS:
            return Token(str(NUMBER_WORDS[word]), NUMBER)
        return Token(self.canonical(word))

    def _without_type_words(self, tokens: list[Token]) -> list[Token]:
        """Drop words naming the type of the entity just before them ("Pokemon unit")."""
        out: list[Token] = []
        for token in tokens:
            if out and token.kind == WORD and token.text in self.entities.get(out[-1].text, ()):
                continue
            out.append(token)
        return out

    def keys(self, text: str) -> frozenset[str]:
        return frozenset(t.key for t in self.tokens(text))

    # --- builders ---------------------------------------------------------------------------

    @classmethod
    def from_markdown(cls, texts: Iterable[str]) -> Vocabulary:
        """Synonyms from documents: in a section whose heading names a term, a line
        ``Also called: a, b or c`` (or ``Synonyms:`` / ``AKA:``) makes each of them mean the
        heading. Multi-word names become phrases."""
        synonyms: dict[str, str] = {}
        phrases: dict[tuple[str, ...], tuple[str, ...]] = {}
        for text in texts:
            heading: list[str] = []
            for line in text.splitlines():
                if m := re.match(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", line):
                    heading = [stem(w) for w in raw_words(m.group(1))]
                    continue
                m = re.match(r"^\s*[-*]?\s*\**(also called|also known as|synonyms?|aka)\**\s*:\s*(.+)$", line, re.IGNORECASE)
                if not m or not heading:
                    continue
                for name in re.split(r",|;|\bor\b|\band\b", m.group(2)):
                    words = raw_words(name.strip(" .*_`"))
                    if not words or words == heading:
                        continue
                    if len(words) == 1 and len(heading) == 1:
                        synonyms[words[0]] = heading[0]
                    else:
                        phrases[tuple(words)] = tuple(heading)
        return cls(synonyms, phrases)

    @classmethod
    def from_schema(cls, entity_values: Mapping[str, Iterable[str]]) -> Vocabulary:
        """Entity names from the data: ``{"business_units": ["Pokemon", "Epson"], ...}``
        (a table or column name -> the names stored in it). The words of the table name
        become the names' type words, so "the Pokemon business unit" reads as "pokemon"."""
        entities: dict[str, set[str]] = {}
        for table, values in entity_values.items():
            type_words = {stem(w) for w in raw_words(table)} | {SYNONYMS.get(stem(w), stem(w)) for w in raw_words(table)}
            type_words |= {"business", "unit"} if "unit" in type_words else set()
            for value in values:
                words = raw_words(str(value))
                if len(words) == 1:
                    entities.setdefault(stem(words[0]), set()).update(type_words)
        return cls(entities={k: frozenset(v) for k, v in entities.items()})


DEFAULT_VOCABULARY = Vocabulary()

__all__ = ["DEFAULT_VOCABULARY", "MEANINGFUL", "STOP_WORDS", "TIME_WORDS", "Token", "Vocabulary", "fold", "raw_words", "stem"]
