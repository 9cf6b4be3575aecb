"""What a statement builds from constants: string builders whose size the text already tells.

The row guard (``limits.py``) bounds a row once the engine has built it, and ``work_mem``
bounds sorts and hashes, but nothing bounds a value *while* it is built: measured on
PostgreSQL 15 (issue 24), ``string_agg(repeat('x', 1000000), '')`` twice over a million-row
``generate_series`` grew one backend to 1.2 GB with ``work_mem`` 32 MB, and DuckDB folds
``repeat('x', 300000000)`` at plan time, outside its memory limit. Where the sizes are
constants, the check can see the bomb before it runs:

- a builder (``repeat(s, n)``: ``len(s) * n``; ``lpad``/``rpad(s, n)``: ``n``) gives its size;
  a row's builders together may not pass ``MAX_ROW_BUILD`` (16 MB, the default
  ``max_row_bytes``: such a row would be refused after it was built anyway);
- with an aggregate that concatenates (``string_agg``, ``array_agg``, ``list``...) the
  statement may build that row once per row of its constant-bound series
  (``generate_series(1, n)``, DuckDB ``range(n)``; several multiply, as a cross join would):
  each such aggregate's estimate (rows x max(row build, 1 byte)) may not pass
  ``MAX_AGGREGATE_BUILD`` (256 MB, the target of ``bench/sql_memory_bombs.py``).

Sizes that come from data (a column, a subquery) are not estimated: the statement timeout
and the engine's own limits (PostgreSQL's 1 GB per value, DuckDB's ``memory_limit``) are
what bounds those, measured in ``bench/sql_memory_bombs.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_ROW_BUILD = 16_000_000
MAX_AGGREGATE_BUILD = 256_000_000
_SERIES = frozenset({"generate_series", "range"})
_CONCATENATING = frozenset({"string_agg", "array_agg", "json_agg", "jsonb_agg", "xmlagg", "json_object_agg",
                            "jsonb_object_agg", "list", "listagg", "group_concat", "json_group_array",
                            "json_group_object"})


@dataclass
class BuildEstimate:
    """What one statement's calls add up to, fed call by call by an engine reader. Each
    argument is given as its constant: an ``int``, a ``str``, or None when not a constant."""

    row_bytes: int = 0
    series_rows: int = 1
    aggregates: int = 0
    builders: list[str] = field(default_factory=list)

    def add_call(self, name: str, arguments: Sequence[int | str | None]) -> None:
        size = _builder_size(name, arguments)
        if size is not None:
            self.row_bytes += size
            self.builders.append(name)
        elif name in _SERIES and (rows := _series_rows(arguments, exclusive_end=name == "range")) is not None:
            self.series_rows *= max(rows, 1)
        elif name in _CONCATENATING:
            self.aggregates += 1

    def refusal(self) -> tuple[str, str] | None:
        """``(rule, reason)`` when the constants already say the statement builds too much."""
        if self.row_bytes > MAX_ROW_BUILD:
            return "resource_limit", (f"{', '.join(sorted(set(self.builders)))}() would build {_mb(self.row_bytes)} in "
                                      f"one row; the limit is {_mb(MAX_ROW_BUILD)}")
        total = self.aggregates * self.series_rows * max(self.row_bytes, 1)
        if self.aggregates and total > MAX_AGGREGATE_BUILD:
            return "resource_limit", (f"aggregating {self.series_rows:,} generated rows would build about {_mb(total)} "
                                      f"in the database's memory; the limit is {_mb(MAX_AGGREGATE_BUILD)}")
        return None


def _builder_size(name: str, arguments: Sequence[int | str | None]) -> int | None:
    if len(arguments) < 2 or not isinstance(arguments[1], int):
        return None
    count = max(arguments[1], 0)
    if name == "repeat":
        text = arguments[0]
        return count * max(len(text.encode()) if isinstance(text, str) else 1, 1)
    if name in ("lpad", "rpad"):
        return count
    return None


def _series_rows(arguments: Sequence[int | str | None], exclusive_end: bool) -> int | None:
    """Rows of ``generate_series(a, b[, step])`` / DuckDB ``range(n)`` / ``range(a, b[, step])``
    from integer constants (None when any bound is not one)."""
    if not arguments or not all(isinstance(a, int) for a in arguments) or len(arguments) > 3:
        return None
    values = [int(a) for a in arguments if isinstance(a, int)]
    if len(values) == 1:
        return values[0] if exclusive_end else None
    start, stop = values[0], values[1]
    step = values[2] if len(values) == 3 else 1
    if step == 0:
        return None
    span = (stop - start) // step
    return max(span + (0 if exclusive_end else 1), 0)


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"
