"""Which tables the model sees for a question: ranked like a search engine.

The question is scored against each logical table's document (``table_index``: BM25F over
name, columns, descriptions); a table the question names outright (``order_items``) ranks
first. Join partners of the best tables then gain a share of their partners' scores (rank
fusion), so the lookup table a question never names still makes the cut; but the first half
of the limit goes to the best matches alone, so a partner never pushes out a table that
matches the question well. Releases of one table (``products_23`` ... ``products_33``) compete
for one place unless the question's numbers pick several. The limit is always filled: a
model shown a table it does not need loses little, one not shown the table it needs cannot
answer.

A family of shards counts once against the limit and is returned as one member — the newest
one whose number the question mentions ("2017" picks ``ga_sessions_20171231``), else the
newest; :func:`shard_family` gives the prompt the family's pattern and range.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import numpy as np

from baton.specialists.sql.schema import SchemaInfo, TableInfo
from baton.specialists.sql.table_index import MAX_TEXT_CHARS, LogicalTable, TableIndex, index_for, split_words, terms

# Tuned on the Spider 2.0 development half with table_index's weights (bench/schema_linking.py).
NEIGHBOUR_SHARE = 0.5  # a join partner of a top table gains this share of the partner's score
PROTECTED_SHARE = 0.5  # this share of the limit goes to the best matches before any partner
VARIANT_SHARE = 0.5  # a release of a table ranked below another release keeps this share
HINT_SHARE = 0.5  # a hinted table (value index, memory) gains this share of the best score
MEANING_SHARE = 0.5  # the table closest by embedding gains this share of it, the next ones less
_IDENTIFIER = re.compile(r"[^\W\d][\w$]*(?:\.[^\W\d][\w$]*)*")
_NUMBER = re.compile(r"(?<!\d)\d{4,8}(?!\d)")


def pick_tables(schema: SchemaInfo, question: str, limit: int, *, hints: Collection[str] = (),
                meaning: Sequence[str] = ()) -> list[TableInfo]:
    """The ``limit`` most relevant tables for ``question``, best first; a shard family counts
    once (one member stands for it). Every table when the schema has at most ``limit``.
    ``hints``: table names ranked up; ``meaning``: tables closest by embedding (``rank``)."""
    tables = list(schema.tables.values())
    if len(tables) <= limit:
        return tables
    if limit <= 0:
        return []
    index = index_for(schema)
    text = question[:MAX_TEXT_CHARS]
    return [_representative(index.tables[i], text) for i in rank(index, text, limit, hints, meaning)]


def rank(index: TableIndex, question: str, limit: int, hints: Collection[str] = (), meaning: Sequence[str] = ()) -> list[int]:
    """The ``min(limit, len(index))`` best logical tables for ``question``, best first. A hinted
    table (one holding a value the question names, one a relevant verified query used) gains
    ``HINT_SHARE`` of the best score: evidence the words alone do not carry, never more than a
    table the question names outright. The tables of the ``meaning`` ranking gain up to
    ``MEANING_SHARE`` of it, less the lower they rank there (a fusion of the two rankings)."""
    n = len(index)
    limit = min(limit, n)
    scores = np.zeros(n, dtype=np.float64)
    for term in set(terms(question)):
        posting = index.postings.get(term)
        if posting is not None:
            ids, saturated = posting
            scores[ids] += index.idf[term] * saturated
    best = max(float(scores.max()), 1.0)
    hinted = sorted({i for i in (index.by_name.get(str(h).lower()) for h in hints) if i is not None})
    if hinted:
        scores[hinted] += HINT_SHARE * best
    for position, name in enumerate(meaning):
        found = index.by_name.get(str(name).lower())
        if found is not None:
            scores[found] += MEANING_SHARE * best * (1 - position / len(meaning))
    named = _named(index, question)
    if named:
        scores[named] = scores.max() + 1.0
    boost = np.zeros(n, dtype=np.float64)
    for i in _best(scores, index.order_hint, limit):
        if scores[i] <= 0:
            break
        for j, sureness in index.neighbours[i]:
            boost[j] += NEIGHBOUR_SHARE * sureness * scores[i]
    protected = _best(_spread(scores, index), index.order_hint, int(limit * PROTECTED_SHARE))
    fused = _spread(np.maximum(scores, boost), index)
    fused[protected] = -np.inf
    return protected + _best(fused, index.order_hint, limit - len(protected))


def _best(scores: np.ndarray, hint: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` highest scores; ties broken by ``hint`` (smaller first)."""
    return [int(i) for i in np.lexsort((hint, -scores))[:k]]


def _spread(scores: np.ndarray, index: TableIndex) -> np.ndarray:
    """``scores`` with each release of a table below its best one cut to ``VARIANT_SHARE``:
    ``activities_24`` ... ``activities_33`` fall below other tables unless the question's
    numbers lift them, so ten releases of one table do not fill the limit."""
    order = np.lexsort((index.order_hint, -scores))
    _, leaders = np.unique(index.variants[order], return_index=True)  # each group's first place
    out = scores * VARIANT_SHARE
    out[order[leaders]] = scores[order[leaders]]
    return out


def _named(index: TableIndex, question: str) -> list[int]:
    """Logical tables the question names by an identifier (``order_items``, ``sales.orders``,
    ``CytoBands_hg38``). A plain word such as "products" is left to the ranking, where it
    already counts: it is as often a word as a table, and "products in release 23" means
    ``products_23``."""
    found: dict[int, None] = {}
    for identifier in _IDENTIFIER.findall(question):
        if len(split_words(identifier)) < 2:
            continue
        lowered = identifier.lower()
        for candidate in (lowered, lowered.rsplit(".", 1)[-1]):
            hit = index.by_name.get(candidate)
            if hit is not None:
                found.setdefault(hit, None)
    return list(found)


def _representative(table: LogicalTable, question: str) -> TableInfo:
    """The member that stands for a family: the newest one whose shard number the question
    mentions (a year matches every date of that year), else the newest."""
    numbers = set(_NUMBER.findall(question)) if table.is_family else set()
    for digits, member in zip(reversed(table.digits), reversed(table.members), strict=False):
        if any(digits.startswith(n) or n.startswith(digits) for n in numbers):
            return member
    return table.members[-1]


def shard_family(schema: SchemaInfo, table: TableInfo) -> tuple[str, str, str, int] | None:
    """``(pattern, first, last, count)`` when ``table`` is one shard of a family
    (``("events_YYYYMMDD", "events_20240101", "events_20241231", 365)``), else None; for the
    prompt, which tells the model to read the members it needs with UNION ALL (a read-only
    role cannot create a view over them)."""
    index = index_for(schema)
    position = index.by_name.get(table.name.lower())
    if position is None or not index.tables[position].is_family:
        return None
    logical = index.tables[position]
    return logical.name, logical.members[0].name, logical.members[-1].name, len(logical.members)
