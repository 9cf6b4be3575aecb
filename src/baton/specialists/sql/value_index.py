"""The values a database's low-cardinality text columns hold, so a question's words find their table.

"Revenue in Germany" names no table and no column: ``customers.country`` holds 'Germany'. The
index reads, once per schema version, the distinct values of text columns that have few of
them (at most ``MAX_VALUES`` among the first ``SAMPLE_ROWS`` rows: statuses, countries,
categories, not names or ids), each through the connection's own safety check and read-only
engine (``SQLConnection.query``), and bounded: at most ``MAX_COLUMNS`` columns, the widest
tables' text columns last. A question is then matched word for word (phrases of up to
``MAX_WORDS`` words, case and accents folded) against the values; the table picker ranks a
table that holds a value the question names up.

A value is data (anyone may have written it): it only ranks tables, it is never shown to the
model from here.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from baton.specialists.sql.schema import SchemaInfo, TableInfo

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection

log = logging.getLogger(__name__)
MAX_COLUMNS = 400
MAX_VALUES = 50
SAMPLE_ROWS = 20_000
MAX_WORDS = 4
MAX_VALUE_CHARS = 60
_TEXT = re.compile(r"char|text|string|varchar|enum", re.IGNORECASE)
_SKIP_NAME = re.compile(r"(^id$|_id$|uuid|guid|hash|token|password|secret|email|phone|url|json|xml)", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> tuple[str, ...]:
    """Folded words (lower case, accents dropped): how values and questions are compared."""
    import unicodedata

    folded = unicodedata.normalize("NFKD", text.lower())
    return tuple(_WORD.findall("".join(c for c in folded if not unicodedata.combining(c))))


@dataclass
class ValueIndex:
    """Phrase (folded words) -> the (table, column) pairs holding it as a value."""

    phrases: dict[tuple[str, ...], set[tuple[str, str]]] = field(default_factory=dict)
    columns_read: int = 0
    seconds: float = 0.0

    def add(self, table: str, column: str, value: str) -> None:
        phrase = words(value)
        if phrase and len(phrase) <= MAX_WORDS and len(value) <= MAX_VALUE_CHARS and not all(w.isdigit() for w in phrase):
            self.phrases.setdefault(phrase, set()).add((table, column))

    def tables_for(self, question: str) -> dict[str, list[str]]:
        """Each table holding a value the question names, with the ``column = value`` matches."""
        said = words(question)[:200]
        found: dict[str, list[str]] = {}
        for size in range(MAX_WORDS, 0, -1):
            for start in range(len(said) - size + 1):
                for table, column in self.phrases.get(said[start:start + size], ()):
                    found.setdefault(table, []).append(f"{column} = {' '.join(said[start:start + size])}")
        return found


def _candidates(schema: SchemaInfo) -> list[tuple[TableInfo, str]]:
    """Text columns worth reading, the narrowest tables' first (a wide table's text is rarely a category)."""
    out = []
    for table in sorted(schema.tables.values(), key=lambda t: (len(t.columns), t.name)):
        for column in table.columns:
            if _TEXT.search(column.type or "") and not _SKIP_NAME.search(column.name) and not column.primary_key:
                out.append((table, column.name))
    return out[:MAX_COLUMNS]


async def build_value_index(connection: SQLConnection, schema: SchemaInfo) -> ValueIndex:
    """The index of ``schema``'s low-cardinality text values (module docstring). A column that
    cannot be read (a permission, a timeout) is left out; the index is advisory."""
    from sqlglot import exp

    index = ValueIndex()
    started = time.perf_counter()
    qualified = connection.kind.schema_qualified_reads
    for table, column in _candidates(schema):
        source = exp.Table(this=exp.to_identifier(table.name, quoted=True),
                           db=exp.to_identifier(table.schema, quoted=True) if table.schema and qualified else None)
        value = exp.column(column, quoted=True)
        sample = exp.select(value.copy()).from_(source).where(exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null()))
                                                              ).limit(SAMPLE_ROWS)
        sql = exp.select(exp.column(column, quoted=True)).distinct().from_(sample.subquery("s")).limit(MAX_VALUES + 1)
        try:
            result = await connection.query(sql.sql(dialect=connection.dialect), row_cap=MAX_VALUES + 1)
        except Exception as exc:  # advisory: one unreadable column does not stop the others
            log.info("value index: %s.%s left out (%s)", table.name, column, type(exc).__name__)
            continue
        index.columns_read += 1
        if result.row_count > MAX_VALUES:
            continue  # names, ids, free text: not a category
        for row in result.rows:
            if isinstance(row[0], str):
                index.add(table.name, column, row[0])
    index.seconds = time.perf_counter() - started
    return index


_BUILT: weakref.WeakKeyDictionary[SQLConnection, tuple[SchemaInfo, asyncio.Task[ValueIndex]]] = weakref.WeakKeyDictionary()


def value_index_for(connection: SQLConnection, schema: SchemaInfo) -> ValueIndex | None:
    """The connection's value index for this schema version, or None while it is being built in
    the background (started here on first use: a question never waits for it; a failed build
    is logged and tried again with the next schema version)."""
    found = _BUILT.get(connection)
    if found is not None and found[0] is schema:
        task = found[1]
        if not task.done():
            return None
        if not task.cancelled() and task.exception() is None:
            return task.result()
        if task.get_loop().is_closed():  # a loop that ended (a worker's): try again on this one
            found = None
        else:
            return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    task = loop.create_task(build_value_index(connection, schema), name=f"baton-value-index-{connection.id}")
    task.add_done_callback(_log_failure)
    _BUILT[connection] = (schema, task)
    return None


def _log_failure(task: asyncio.Task[ValueIndex]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("value index: not built (%s)", type(task.exception()).__name__)


__all__ = ["MAX_COLUMNS", "MAX_VALUES", "ValueIndex", "build_value_index", "value_index_for", "words"]
