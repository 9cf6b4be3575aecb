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
_DEFINES = frozenset("is are equals means".split())
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
    """The business term the comment says the column *is*: a clause that starts with it ("Revenue of
    this line", "...: the revenue of the invoice"), not one that defines it ("revenue is price *
    quantity") or denies it ("not revenue")."""
    for clause in re.split(r"[,:;.()]", comment.lower()):
        words = re.findall(r"[a-z]+", clause)
        while words and words[0] in _ARTICLES:
            words = words[1:]
        for term in TERMS:
            size = len(term.split())
            if " ".join(words[:size]) == term and (len(words) == size or words[size] not in _DEFINES):
                return term
    return ""


def comment_formula(comment: str) -> tuple[str, str]:
    """A business term the comment defines over columns: "revenue is unit_price * quantity * (1 - discount)"
    -> ("revenue", "unit_price * quantity * (1 - discount)"); the caller checks the expression."""
    for term in TERMS:
        found = re.search(rf"\b{term}\s+(?:is|=|equals)\s+([A-Za-z0-9_ .*+/()-]+?)\s*(?:[;,]|\.(?:\s|$)|$)", comment, re.IGNORECASE)
        if found and re.search(r"[*+/-]", found.group(1)):
            return term, found.group(1).strip()
    return "", ""

__all__ = ["SYNONYMS", "TERMS", "comment_formula", "comment_head", "comment_term", "name_words", "phrase_plural", "phrase_singular",
           "plural", "said", "singular", "snake"]
