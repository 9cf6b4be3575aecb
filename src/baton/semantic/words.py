"""Names said in words, for the draft model: ``line_total`` -> "line total", ``InvoiceDate`` ->
"invoice date", a comment's head noun ("Revenue of this line" -> "revenue"), singular and plural.

The draft names metrics and dimensions the way people ask for them, so these rules are
deliberately small and explainable: split names at ``_`` and case changes; a comment's head
is its words before the first preposition or punctuation (at most three words); a business
term a comment names ("... the revenue of the invoice") wins over the column's own name.
"""

from __future__ import annotations

import re

_CASE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_BREAK = frozenset("of on in for per at from by with to after before including excluding as when where which that".split())
_ARTICLES = frozenset("a an the this that one each our its".split())
_NEGATIONS = frozenset("not no never without excluding except nor".split())
TERMS = ("revenue", "sales", "turnover", "profit", "cost", "costs", "units sold")  # what a column *is*, not what it includes
SYNONYMS = {  # words people use for the same business term (the draft adds them; the checklist says so)
    "revenue": ("sales", "turnover"),
    "quantity": ("units", "units sold"),
    "cost": ("costs", "spend"),
}


def name_words(name: str) -> list[str]:
    """``line_total`` -> [line, total]; ``InvoiceDate`` -> [invoice, date]."""
    return [w.lower() for part in name.split("_") for w in _CASE.split(part) if w]


def said(name: str) -> str:
    return " ".join(name_words(name))


def snake(words: str) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", words.lower()))


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word if singular(word) != word else word + "es"
    return word + "s"


def phrase_singular(words: str) -> str:
    parts = words.split()
    return " ".join([*parts[:-1], singular(parts[-1])]) if parts else words


def phrase_plural(words: str) -> str:
    parts = words.split()
    return " ".join([*parts[:-1], plural(singular(parts[-1]))]) if parts else words


def comment_head(comment: str) -> str:
    """The comment's head noun phrase: "Units sold on this line" -> "units sold"; "" when it has none."""
    first = re.split(r"[,:;.()\[\]]", comment, maxsplit=1)[0]
    words = re.findall(r"[a-z]+(?:['-][a-z]+)*", first.lower())
    out: list[str] = []
    for word in words:
        if word in _BREAK:
            break
        if word in _ARTICLES and not out:
            continue
        out.append(word)
    return " ".join(out) if 0 < len(out) <= 3 else ""


def comment_term(comment: str) -> str:
    """The first business term the comment names ("... the revenue of the invoice" -> "revenue"), unless
    it is denied ("Shipping charged, not revenue" names none)."""
    words = re.findall(r"[a-z]+", comment.lower())
    hits = []
    for term in TERMS:
        size = len(term.split())
        for i in range(len(words) - size + 1):
            if " ".join(words[i:i + size]) == term:
                if not _NEGATIONS & set(words[max(0, i - 3):i]):  # "shipping fees are not revenue"
                    hits.append((i, term))
                break
    return min(hits)[1] if hits else ""


__all__ = ["SYNONYMS", "TERMS", "comment_head", "comment_term", "name_words", "phrase_plural", "phrase_singular",
           "plural", "said", "singular", "snake"]
