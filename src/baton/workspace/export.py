"""An answer's result as a CSV file (the page's "Download CSV").

``answer_csv(answer, part)`` writes the rows of a stored answer: its full ``QueryResult``
when it has one (every row the query returned, not only the rows the page shows), else its
``data`` (a list of records; for a synthesis answer, ``part`` names the specialist whose
table is wanted).

Decisions (the issue was silent):

- UTF-8 with a byte-order mark and CRLF line ends: what spreadsheet programs, the usual
  destination of a CSV download, open correctly with accents; every CSV reader accepts it.
- A text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is
  written with a leading apostrophe, so a spreadsheet shows it as text instead of running it
  as a formula (CSV injection). Numbers are never changed (``-5`` stays ``-5``).
- Dates and times as ISO 8601; decimals exactly as the database returned them; empty for NULL.
- The file name is the question's words (letters, digits, dashes), at most 60 characters.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import re
from typing import Any

from baton.errors import BatonError
from baton.response import AIMessage

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class NoTableError(BatonError):
    """The answer has no table to export (a text answer, or no such part)."""


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, decimal.Decimal)):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    text = value if isinstance(value, str) else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def _table(answer: AIMessage, part: str | None) -> tuple[list[str], list[list[Any]]]:
    data = answer.data
    if part is not None:
        if not isinstance(data, dict) or part not in data:
            raise NoTableError(f"this answer has no table named {part!r}")
        data = data[part]
    elif answer.results is not None and answer.results.columns:
        return list(answer.results.columns), [list(r) for r in answer.results.rows]
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a DataFrame
        return [str(c) for c in data.columns], data.values.tolist()
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        columns = list(dict.fromkeys(k for r in data for k in r))
        return columns, [[r.get(c) for c in columns] for r in data]
    raise NoTableError("this answer has no table")


def filename(answer: AIMessage, part: str | None = None) -> str:
    words = re.findall(r"[A-Za-z0-9]+", " ".join(filter(None, [answer.input or "result", part])))
    return ("-".join(words).lower()[:60].strip("-") or "result") + ".csv"


def answer_csv(answer: AIMessage, part: str | None = None) -> str:
    """The CSV text (module docstring); ``NoTableError`` when there is no table."""
    columns, rows = _table(answer, part)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([_cell(c) for c in columns])
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return "\ufeff" + out.getvalue()
