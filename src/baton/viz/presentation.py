"""Dress a data answer for people: chart, follow-up suggestions, insights.

``present(message)`` is the one call a specialist makes on an ``AIMessage`` that carries
``results``. It returns a copy with ``viz_type``/``viz_config`` (``baton.viz``),
``suggested_followups`` (``baton.viz.suggest``) and ``insights`` (``baton.viz.insights``) filled in;
the message passed in is never changed.

The presentation layer depends only on the protocol layer (``baton.response``, plus
``baton.errors``) and the question helpers (``baton.followup_sql``), never on agents,
specialists, the loop or the memory, so any specialist may call it without an import cycle.

Decisions:

- A ``viz_type`` already on the message (other than the default ``"text"``), e.g. one an LLM
  proposed, is treated as a request: kept when it fits the data, corrected (to bar, else
  table) when it does not. The spec itself is always rebuilt from ``results``: a spec that
  came from a model is untrusted input (it could name an external data URL) and may not
  match the rows.
- The chart's title is the user's question (``message.input``) when there is one.
- Follow-ups use ``message.query`` (the SQL), the result and the chart drawn, so only those
  that fit this result and can be answered are offered (``baton.viz.suggest``); ``seed``
  makes them reproducible.
- The same result dressed for the same question is dressed once (issue 13: it was the
  largest share of a verified answer's CPU): the chart, follow-ups and insights are kept
  in a small table keyed by everything they depend on (question, SQL, requested chart,
  dialect, seed and a digest of the rows), and the answers that share them never edit
  them in place. The copy returned shares the rows (a new message, new lists; the row
  dicts themselves are not copied).
- Dressing 10,000 rows takes about a quarter of a second of CPU: async code calls
  ``present_async``, which dresses in a worker thread so the event loop keeps serving the
  other requests meanwhile (the cache is shared under a lock). A result of at most
  ``INLINE_ROWS`` rows is dressed on the loop: it takes under a millisecond (far less
  when cached), not worth a thread hop.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from typing import Any

from baton.response import AIMessage
from baton.viz.choose import choose_chart
from baton.viz.insights import find_insights
from baton.viz.suggest import generate_followups

_DRESSED: OrderedDict[tuple, tuple[str, dict[str, Any], list[str], list[dict[str, Any]]]] = OrderedDict()
_DRESSED_LOCK = threading.Lock()
DRESSED_ENTRIES = 256
MAX_DIGESTED_ROWS = 20_000  # a bigger result is dressed every time (its digest would cost as much)
INLINE_ROWS = 50  # present_async dresses a result this small on the loop (module docstring)


def _key(message: AIMessage, requested: str | None, seed: int | None) -> tuple | None:
    result = message.results
    if result is None or result.row_count > MAX_DIGESTED_ROWS:
        return None
    digest = hashlib.sha256(repr((result.columns, result.column_types, result.rows, result.truncated)).encode(
        "utf-8", "surrogatepass")).hexdigest()
    return (message.input, message.query, requested, message.meta.get("dialect"), seed, digest)


def present(message: AIMessage, *, seed: int | None = None) -> AIMessage:
    """A copy of ``message`` with chart, follow-ups and insights; unchanged if it has no results."""
    result = message.results
    if result is None:
        return message
    requested = message.viz_type if message.viz_type and message.viz_type != "text" else None
    key = _key(message, requested, seed)
    with _DRESSED_LOCK:
        dressed = None
        if key is not None:
            dressed = _DRESSED.get(key)
            if dressed is not None:
                _DRESSED.move_to_end(key)
    if dressed is None:
        choice = choose_chart(result, question=message.input, requested=requested)
        dressed = (choice.viz_type, choice.viz_config,
                   generate_followups(message.query, result.columns, result.row_count, seed=seed, result=result,
                                      dialect=message.meta.get("dialect"), viz_type=choice.viz_type),
                   find_insights(result))
        if key is not None:
            with _DRESSED_LOCK:
                _DRESSED[key] = dressed
                while len(_DRESSED) > DRESSED_ENTRIES:
                    _DRESSED.popitem(last=False)
    viz_type, viz_config, followups, insights = dressed
    return message.shallow_copy(viz_type=viz_type, viz_config=viz_config, suggested_followups=list(followups),
                                insights=[dict(i) for i in insights])  # a new message sharing the rows


async def present_async(message: AIMessage, *, seed: int | None = None) -> AIMessage:
    """``present`` in a worker thread (module docstring); a message without results is
    returned as it is, and a small result dressed at once, without a thread hop."""
    if message.results is None:
        return message
    if message.results.row_count <= INLINE_ROWS and len(message.results.columns) <= INLINE_ROWS:
        return present(message, seed=seed)
    return await asyncio.to_thread(present, message, seed=seed)
