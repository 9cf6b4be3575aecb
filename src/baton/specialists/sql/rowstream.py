"""A statement's rows, read one at a time so that a result is bounded while it is fetched
(``execute.py`` keeps what fits), and never draining what is left unread.

Each engine fills a ``RowReader`` in its ``open_rows`` (``engines/``): PostgreSQL streams in
libpq single-row mode, MySQL/MariaDB through an unbuffered cursor whose packets are bounded,
SQLite under a per-statement value-length limit, DuckDB from its streaming result. A reader
that stopped early on a server connection, or a SQLite connection on which
``printf``/``format`` were replaced, is ``abandoned``: ``execute.py`` invalidates it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

_END = object()


class RowReader:
    """One statement's rows, read one at a time, and what to do when reading stops early
    (filled in per engine by ``open_rows``). ``in_flight``: the server may still be sending this
    result (never, in process); ``abandon``: called before such a connection is closed, so
    that nothing drains it; ``abandoned``: the connection must not be pooled again."""

    def __init__(self, bounded: bool) -> None:
        self.bounded = bounded  # a LIMIT row_cap + 1 is known to apply
        self.rows: Iterator[Any] = iter(())
        self.description: Callable[[], Any] = lambda: None
        self.in_flight: Callable[[], bool] = lambda: False
        self.abandon: Callable[[], None] = lambda: None
        self.abandoned = False


def stop_reading(reader: RowReader, stopped_at_row_cap: bool) -> None:
    """Reading stopped before the end. After the row cap's extra row, a LIMIT row_cap + 1
    leaves only the end of the result to read; anything else is abandoned, not drained."""
    if stopped_at_row_cap and reader.bounded and next(reader.rows, _END) is _END:
        return
    reader.abandoned = reader.abandoned or reader.in_flight()  # in process: the next statement replaces it
