"""Turning a user's question into a safe SQLite FTS5 query.

User text is never FTS5 syntax. The question is cut into words (Unicode letters and
digits), common English stop words are dropped (unless nothing else is left), and each word
is emitted as a double-quoted FTS5 string, OR-ed together, so ``AND``, ``OR``, ``NOT``,
``NEAR(...)``, ``*``, ``^``, ``column:`` filters and stray quotes in the question are plain
words or nothing — never operators. BM25 then ranks chunks by how many of the words they
hold and how rare those words are. OR (not FTS5's implicit AND) because a natural question
almost never has all its words in the passage that answers it.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

MAX_QUERY_TERMS = 32

STOPWORDS = frozenset(
    """a about after all also am an and any are as at be been before being between both but by
    can could did do does doing during each few for from further had has have having he her
    here hers him his how i if in into is it its itself just me more most my no nor not now of
    off on once only or other our ours out over own same she should so some such than that the
    their theirs them then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours""".split()
)


def query_terms(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct search words of ``text``, lower-cased, stop words removed (kept when the
    question is nothing but stop words), at most ``max_terms``."""
    words = [w.lower() for w in _WORD.findall(text)]
    content = [w for w in words if w not in STOPWORDS]
    chosen = content or words
    return list(dict.fromkeys(chosen))[:max_terms]


def fts_match_expression(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> str | None:
    """An FTS5 MATCH expression for ``text`` (quoted terms joined by OR), or None when the
    text has no searchable word."""
    terms = query_terms(text, max_terms=max_terms)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
