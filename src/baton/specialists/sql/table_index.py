"""The search index the table picker ranks with: one document per *logical* table.

Warehouse schemas have hundreds of tables with terse names and their meaning in comments, so
each table's document has four fields — its name's words, its columns' names' words, the
table's and columns' descriptions, its schema's name — scored with BM25F (field weights,
per-field length normalisation) plus a separately saturated bonus for words of the name.
Names are split the way people write them (``snake_case``, ``camelCase``, digit runs as
their own words: ``gsod1929`` is ``gsod`` + ``1929``) so a year or a release number in a
question meets the table that carries it; words are stemmed with the Snowball English
stemmer on both sides ("employees" and "employee" share a stem).

Date- or year-sharded tables (``events_20240101`` ... ``events_20241231``: names differing only
by a trailing 4-8 digit run, in one schema) are one logical table: a person asks about "the
events table", not one day of it, and 365 near-identical documents would crowd every other
table out of the limit.

Join partners come from declared foreign keys and from inferred keys (``customer_id`` ->
``customers``; a key column shared by a few tables), because most warehouses declare none.

Building costs one pass over the schema; :func:`index_for` caches it per schema object and
content fingerprint, so each question only pays for its own words.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import snowballstemmer  # type: ignore[import-untyped]  # pure Python, BSD-3-Clause, no stubs

from baton.specialists.sql.schema import SchemaInfo, TableInfo

# Tuned on the Spider 2.0 development half (bench/schema_linking.py), never per database; the
# figures stay on a plateau when any one of them moves by half.
NAME_WEIGHT, COLUMN_WEIGHT, DESCRIPTION_WEIGHT, SCHEMA_WEIGHT = 3.0, 1.0, 0.5, 0.5
NAME_B, COLUMN_B, DESCRIPTION_B = 0.5, 0.75, 0.75
K1 = 2.0
NAME_BONUS = 1.0  # a name word also scores on its own: the name says what the table is about
SHARED_KEY_WEIGHT = 0.5  # a join guessed from a shared key column counts half a declared one
MAX_SHARED_KEY_TABLES = 6  # a key column shared by more tables than this is a hub, not a join
MAX_TEXT_CHARS = 20_000  # a question or a description longer than this is read up to here
_CACHE_SIZE = 8

_CHUNK = re.compile(r"[^\W_]+")
# Word boundaries inside an alphanumeric run: camelCase, an acronym before a word (HTTPServer),
# digits; an acronym's plural stays whole (UUIDs).
_BOUNDARY = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])(?![A-Z]s$)|(?<=\d)(?=\D)|(?<=\D)(?=\d)")
_SHARD = re.compile(r"(.*\D)(\d{4,8})", re.DOTALL)
_DIGITS = re.compile(r"\d+")
_KEY_WORDS = frozenset({"id", "key"})
_NUMBER_WORDS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}

ENGLISH_STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each either few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself neither no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who whom
    whose why will with would you your yours yourself yourselves
    s t d ll m re ve don doesn didn isn aren wasn weren won wouldn shouldn couldn""".split()  # it's, don't
)
# Words of asking, not of data: "calculate" in a question should not pick a column comment
# that says "calculated".
STOP_WORDS = ENGLISH_STOP_WORDS | frozenset(
    """please show list give find tell get return display provide retrieve calculate compute determine
    identify using use based according want need""".split()
)


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Snowball (Porter2) English stem of a lower-cased word; numbers and short words as
    they are. Cached: schemas and questions repeat their words."""
    if len(word) <= 2 or word.isdigit():
        return word
    return str(_stemmer().stemWord(word))


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    return snowballstemmer.stemmer("english")  # built on first use, not at import


def split_words(text: str) -> list[str]:
    """Lower-cased words of a name or a sentence: snake_case, camelCase and digit runs split
    (``customerID2014`` -> ``customer``, ``id``, ``2014``)."""
    return [part.lower() for chunk in _CHUNK.findall(text) for part in _BOUNDARY.split(chunk) if part]


def terms(text: str) -> list[str]:
    """The searchable terms of ``text``: its words (number words as digits, stop words
    dropped), stemmed; each pair of neighbouring words written as one ("zip code" also gives
    ``zipcode``, ``CytoBands`` also ``cytobands``), since names glue words at will; and the
    initials of runs of capitalised words ("American Community Survey" also gives ``acs``),
    since names abbreviate them."""
    out: list[str] = []
    previous = ""
    capitals: list[str] = []
    for chunk in _CHUNK.findall(text[:MAX_TEXT_CHARS]):
        if chunk[0].isupper():
            capitals.append(chunk[0].lower())
        else:
            out.extend(_acronyms(capitals))
            capitals = []
        for part in _BOUNDARY.split(chunk):
            word = part.lower()
            if not word or word in STOP_WORDS:
                previous = ""
                continue
            word = _NUMBER_WORDS.get(word, word)
            out.append(stem(word))
            if previous and word.isalpha():
                out.append(stem(previous + word))
            previous = word if word.isalpha() else ""
    out.extend(_acronyms(capitals))
    return out


def _acronyms(initials: list[str]) -> list[str]:
    """Every run of three to eight consecutive initials."""
    return ["".join(initials[start:end]) for start in range(len(initials))
            for end in range(start + 3, min(len(initials), start + 8) + 1)]


@dataclass(slots=True)
class LogicalTable:
    """One table, or one family of shards (``members`` oldest first, ``digits`` their numbers)."""

    name: str  # the table's name, or the family's pattern (``events_YYYYMMDD``)
    members: list[TableInfo]
    digits: list[str]

    @property
    def is_family(self) -> bool:
        return bool(self.digits)

    @property
    def base_name(self) -> str:
        """The name without its shard number (``events_`` for ``events_20240101``...)."""
        newest = self.members[-1].name
        return newest[: len(newest) - len(self.digits[-1])] if self.digits else newest


@dataclass(slots=True)
class TableIndex:
    """The ranked-search view of one schema (see the module docstring)."""

    tables: list[LogicalTable]
    by_name: dict[str, int]  # lower-cased real table name -> logical table
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # term -> (logical tables, saturated weight)
    idf: dict[str, float]
    neighbours: list[list[tuple[int, float]]]  # join partners and how sure each join is
    order_hint: np.ndarray  # tie-break for equal scores: bigger tables first, then by name
    variants: np.ndarray  # tables with one name but for its numbers (releases) share a value

    def __len__(self) -> int:
        return len(self.tables)


def shard_groups(tables: Iterable[TableInfo]) -> list[LogicalTable]:
    """Group tables into logical tables: names that differ only by a trailing 4-8 digit run,
    in one schema, with at least two members, are one family."""
    groups: dict[tuple[str, str, int], list[tuple[str, TableInfo]]] = defaultdict(list)
    logical: list[LogicalTable] = []
    for table in tables:
        match = _SHARD.fullmatch(table.name)
        if match is None:
            logical.append(LogicalTable(table.name, [table], []))
        else:
            prefix, digits = match.groups()
            groups[((table.schema or "").lower(), prefix.lower(), len(digits))].append((digits, table))
    for members in groups.values():
        if len(members) == 1:
            logical.append(LogicalTable(members[0][1].name, [members[0][1]], []))
            continue
        members.sort(key=lambda item: (int(item[0]), item[1].name))
        first_digits, first = members[0]
        pattern = first.name[: len(first.name) - len(first_digits)] + _digit_pattern([d for d, _ in members])
        logical.append(LogicalTable(pattern, [t for _, t in members], [d for d, _ in members]))
    return logical


def _digit_pattern(digits: Sequence[str]) -> str:
    """``YYYYMMDD``, ``YYYYMM`` or ``YYYY`` when every shard number reads as such a date, else
    one ``N`` per digit."""
    shape = {8: "YYYYMMDD", 6: "YYYYMM", 4: "YYYY"}.get(len(digits[0]))
    dated = all(1800 <= int(d[:4]) <= 2199 and (len(d) < 6 or 1 <= int(d[4:6]) <= 12)
                and (len(d) < 8 or 1 <= int(d[6:8]) <= 31) for d in digits)
    return shape if shape and dated else "N" * len(digits[0])


def build_index(schema: SchemaInfo) -> TableIndex:
    """Index every table of ``schema`` (see the module docstring)."""
    logical = sorted(shard_groups(schema.tables.values()), key=lambda lt: lt.name.lower())
    by_name = {m.name.lower(): i for i, lt in enumerate(logical) for m in lt.members}
    seen: dict[str, list[str]] = {}
    fields = [_fields(lt, seen) for lt in logical]
    n = len(logical)
    weights = (NAME_WEIGHT, COLUMN_WEIGHT, DESCRIPTION_WEIGHT, SCHEMA_WEIGHT)
    bs = (NAME_B, COLUMN_B, DESCRIPTION_B, 0.0)
    averages = [max(1e-9, sum(sum(f[k].values()) for f in fields) / max(1, n)) for k in range(4)]
    combined: dict[str, dict[int, float]] = defaultdict(dict)  # BM25F: weighted, normalised tf
    named: dict[str, dict[int, float]] = defaultdict(dict)  # the name field alone
    for doc, doc_fields in enumerate(fields):
        for k, counts in enumerate(doc_fields):
            norm = (1 - bs[k]) + bs[k] * sum(counts.values()) / averages[k]
            for term, tf in counts.items():
                combined[term][doc] = combined[term].get(doc, 0.0) + weights[k] * tf / norm
                if k == 0:
                    named[term][doc] = tf / norm
    postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    idf: dict[str, float] = {}
    for term, docs in combined.items():
        ids = np.fromiter(docs.keys(), dtype=np.int64, count=len(docs))
        weighted = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
        in_name = named.get(term, {})
        name_tf = np.fromiter((in_name.get(d, 0.0) for d in docs), dtype=np.float64, count=len(docs))
        postings[term] = (ids, weighted / (K1 + weighted) + NAME_BONUS * name_tf / (K1 + name_tf))
        idf[term] = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
    hint = np.empty(n, dtype=np.int64)
    hint[sorted(range(n), key=lambda i: (-(logical[i].members[-1].row_estimate or 0), logical[i].name.lower()))] = np.arange(n)
    keys: dict[tuple[str, str], int] = {}
    variants = np.fromiter((keys.setdefault(((lt.members[-1].schema or "").lower(), _DIGITS.sub("#", lt.base_name.lower())),
                                            len(keys)) for lt in logical), dtype=np.int64, count=n)
    return TableIndex(logical, by_name, postings, idf, _neighbours(logical, by_name, variants), hint, variants)


def _fields(table: LogicalTable, seen: dict[str, list[str]]) -> tuple[Counter[str], Counter[str], Counter[str], Counter[str]]:
    """Term counts of the name, columns, descriptions and schema name. A family's columns and
    descriptions are the distinct ones of its members (counted once, however many shards).
    ``seen`` keeps each text's terms for the whole build: wide warehouses repeat the same
    columns and comments in hundreds of tables."""

    def cached(text: str) -> list[str]:
        found = seen.get(text)
        if found is None:
            found = seen[text] = terms(text)
        return found

    column_names: dict[str, None] = {}
    descriptions: dict[str, None] = {}
    for member in table.members:
        descriptions.setdefault(member.description[:MAX_TEXT_CHARS], None)
        for column in member.columns:
            column_names.setdefault(column.name, None)
            descriptions.setdefault(column.description[:MAX_TEXT_CHARS], None)
    return (
        Counter(terms(table.base_name)),
        Counter(t for c in column_names for t in cached(c)),
        Counter(t for d in descriptions if d for t in cached(d)),
        Counter(cached(table.members[-1].schema or "")),
    )


def _neighbours(logical: list[LogicalTable], by_name: dict[str, int], variants: np.ndarray) -> list[list[tuple[int, float]]]:
    """Join partners of each logical table, with how sure the join is: declared foreign keys
    (both ways) and a ``<table>_id`` column naming another table (``customer_id``,
    ``owner_user_id`` -> ``users``) are sure; a key column shared by a few tables is a guess.
    Releases of one table (``products_23``, ``products_24``) count as one table when deciding
    what is rare, and pair with the same release of the other table."""
    edges: list[dict[int, float]] = [{} for _ in logical]

    def link(a: int, b: int, weight: float) -> None:
        if a != b:
            edges[a][b] = edges[b][a] = max(edges[a].get(b, 0.0), weight)

    release = [tuple(_DIGITS.findall(lt.base_name)) for lt in logical]
    by_words: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
    for i, lt in enumerate(logical):
        words = tuple(stem(w) for w in split_words(lt.base_name) if not w.isdigit())
        by_words.setdefault((words, release[i]), i)
        by_words.setdefault((words, ()), i)
    shared: dict[str, set[int]] = defaultdict(set)
    for i, lt in enumerate(logical):
        for member in lt.members:
            for fk in member.foreign_keys:
                target = by_name.get(fk.ref_table.lower())
                if target is not None:
                    link(i, target, 1.0)
            for column in member.columns:
                column_words = split_words(column.name)
                if len(column_words) < 2 or column_words[-1] not in _KEY_WORDS:
                    continue
                shared[column.name.lower()].add(i)
                key = tuple(stem(w) for w in column_words[:-1])
                for start in range(len(key)):  # customer_id, then owner_user_id -> user
                    target = by_words.get((key[start:], release[i]), by_words.get((key[start:], ())))
                    if target is not None:
                        link(i, target, 1.0)
                        break
    for holders in shared.values():
        if 2 <= len({int(variants[h]) for h in holders}) <= MAX_SHARED_KEY_TABLES:
            for a in holders:
                for b in holders:
                    if a < b and variants[a] != variants[b] and release[a] == release[b]:
                        link(a, b, SHARED_KEY_WEIGHT)
    return [sorted(e.items()) for e in edges]


def fingerprint(schema: SchemaInfo) -> int:
    """A cheap hash of what the index reads — names, descriptions, columns, foreign keys — so
    a description filled in place (``SQLConnection.describe``) is indexed again. Flat lists,
    not a tuple per column: a 70,000-column warehouse hashes in a few milliseconds."""
    tables = list(schema.tables.values())
    columns = [c for t in tables for c in t.columns]
    return hash((
        tuple([(t.name, t.schema, t.description, t.row_estimate, len(t.columns)) for t in tables]),
        tuple([c.name for c in columns]),
        tuple([c.description for c in columns]),
        tuple([(tuple(fk.columns), fk.ref_table) for t in tables for fk in t.foreign_keys]),
    ))


_CACHE: OrderedDict[tuple[int, int], tuple[SchemaInfo, TableIndex]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def index_for(schema: SchemaInfo) -> TableIndex:
    """The index of ``schema``, built once per schema object and content. ``SchemaInfo`` has
    slots and no weak references, so the last few schemas are kept (the entry holds the
    schema, so its id cannot be reused while cached) and the key adds a content fingerprint:
    a schema changed in place is indexed again."""
    key = (id(schema), fingerprint(schema))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is schema:
            _CACHE.move_to_end(key)
            return hit[1]
    built = build_index(schema)
    with _CACHE_LOCK:
        _CACHE[key] = (schema, built)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return built
