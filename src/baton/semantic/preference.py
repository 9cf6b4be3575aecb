"""Which of several valid readings a question's words favour (the parser's tie-breaks).

Two readings that both answer are never chosen between by guessing (``parser.py`` asks back);
these say when the words themselves decide:

- ``loose``: how loosely a reading reads its words — an entity named after "from", "of",
  "for", "among" or "with" read as a metric or a breakdown ("revenue from customers in
  Germany": the customers qualify the revenue, they are neither counted nor listed), a count
  of an entity read beside a value of that entity ("the Rock genre": a genre, not the number
  of genres), a value matched by only part of its words ("track" in an album's title), an
  entity after "by", "per", "each" or "every" read as context where its words name a
  breakdown ("revenue for each customer in Italy" lists the customers). The loosest
  readings lose.
- ``names_one``: "which category had the highest revenue" names one category (a top 1);
  "which categories" all of them, ranked.
"""

from __future__ import annotations

from baton.semantic.lexicon import Lexicon, Sense, phrase_of
from baton.semantic.model import TIME, SemanticModel

CONNECTORS = frozenset({"from", "of", "for", "among", "with"})  # "revenue from customers": what follows qualifies
BREAKDOWN = frozenset({"by", "per", "each", "every"})  # "for each customer": what follows is listed
JOINING = CONNECTORS | BREAKDOWN


def _neighbours(meaningful: list[Sense], index: int) -> list[Sense]:
    return [meaningful[j] for j in (index - 1, index + 1) if 0 <= j < len(meaningful)]


def names_one(seq: tuple[Sense, ...], words: list[str], by: list[str]) -> bool:
    """Whether the one thing ranked is named in the singular after "which" ("which category had the most")."""
    dims = [s for s in seq if s.kind == "dimension" and s.name in by]
    if len(dims) != 1 or len([b for b in by if b != TIME]) != 1 or TIME in by:
        return False
    start = dims[0].start
    if not start or words[start - 1].lower() not in ("which", "what"):
        return False
    last = words[dims[0].end - 1].lower()
    return not last.endswith("s") or last.endswith(("ss", "us", "is"))


def loose(model: SemanticModel, lexicon: Lexicon, seq: tuple[Sense, ...], words: list[str], ranked: bool) -> int:
    """How loosely a reading reads its words, for choosing among valid ones: each sense read as a metric
    or a breakdown where the words name an entity after "from", "of", "for", "among" or "with" ("revenue
    from customers in Germany": the customers qualify, they are no metric), each count of an entity read
    beside a value of that entity ("the Rock genre": a genre, not the number of genres), and each
    value matched by part of its words ("track" in an album's title)."""
    count = sum(1 for s in seq if s.kind == "value" and s.extra == ("partial",))
    meaningful = [s for s in seq if s.kind != "filler"]
    for i, sense in enumerate(meaningful):
        if sense.kind == "metric" and any(n.kind == "value" and _counts_entity_of(model, sense.name, n.name)
                                          for n in _neighbours(meaningful, i)):
            count += 1
    for i, sense in enumerate(seq):
        names_entity = sense.kind in ("metric", "dimension") and _names_entity(lexicon, words, sense)
        if names_entity and sense.kind == "dimension" and not ranked and not (
                i and seq[i - 1].kind == "filler" and seq[i - 1].name.lower() in BREAKDOWN):
            count += 1  # a breakdown nobody asked for ("by", "per", "each" or a ranking asks for one)
            continue
        if sense.kind == "entity" and i and seq[i - 1].kind == "filler" and seq[i - 1].name.lower() in BREAKDOWN:
            phrase = tuple(phrase_of(" ".join(words[sense.start:sense.end])))
            count += any(s.kind == "dimension" for s in lexicon.phrases.get(phrase, ()))  # "for each customer": listed
            continue
        if sense.kind not in ("metric", "dimension") or (ranked and sense.kind == "dimension"):
            continue
        j = i - 1  # back over filler and values ("from business customers") to the word that joins it
        while j >= 0 and seq[j].kind in ("filler", "value") and not (seq[j].kind == "filler" and seq[j].name.lower() in JOINING):
            j -= 1
        if j < 0 or seq[j].kind != "filler" or seq[j].name.lower() in BREAKDOWN:  # "for each customer": a breakdown
            continue
        phrase = tuple(phrase_of(" ".join(words[sense.start:sense.end])))
        if any(s.kind == "entity" for s in lexicon.phrases.get(phrase, ())):
            count += 1
    return count


def unjoined_count(lexicon: Lexicon, words: list[str], seq: tuple[Sense, ...]) -> str:
    """The words of a metric that also name an entity, read beside another metric with no "and", "or", "vs"
    or comma between them ("how many customers placed an order": not customers *and* orders); "" if none."""
    metric_at = [i for i, s in enumerate(seq) if s.kind == "metric"]
    for i in metric_at:
        if _names_entity(lexicon, words, seq[i]) and any(_unjoined(seq, i, j) for j in metric_at if j != i):
            return " ".join(words[seq[i].start:seq[i].end])
    return ""


def _names_entity(lexicon: Lexicon, words: list[str], sense: Sense) -> bool:
    phrase = tuple(phrase_of(" ".join(words[sense.start:sense.end])))
    return any(s.kind == "entity" for s in lexicon.phrases.get(phrase, ()))


def _unjoined(seq: tuple[Sense, ...], i: int, j: int) -> bool:
    """Two metrics with no "and", "or", "vs" or comma between them: one of them qualifies the other."""
    between = seq[min(i, j) + 1:max(i, j)]
    return not any(s.kind == "compare" or (s.kind == "filler" and s.name.lower() in ("and", "or", ",")) for s in between)


def _counts_entity_of(model: SemanticModel, metric: str, dimension: str) -> bool:
    """Whether ``metric`` counts the rows of the entity that holds ``dimension``."""
    found = model.metric(metric)
    if found.type != "simple" or not found.measure:
        return False
    measure = model.measure(found.measure)
    return measure.agg in ("count", "count_distinct") and measure.entity == model.dimension(dimension).entity


__all__ = ["BREAKDOWN", "CONNECTORS", "loose", "names_one", "unjoined_count"]
