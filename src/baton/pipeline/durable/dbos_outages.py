"""DBOS's pollers (notifications, workflow events, schedules, queues) log a warning, often with
a traceback, at every poll that fails: several a second for as long as the state database is
away, in every process. ``quiet_dbos_outages()`` puts a filter on DBOS's logger that folds
each record saying the database cannot be reached into the process's one ``OutageLog`` of
the state database (``baton.outages``), which the heartbeat feeds too and which says when it
is back: an outage is one line down and one line back. Other DBOS records pass unchanged.
"""

from __future__ import annotations

import logging
import re

from baton.outages import STATE_DATABASE, is_outage, outage

_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception|Timeout)\b.*:")


class DBOSOutageFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        exc = record.exc_info[1] if record.exc_info else None
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to judge
            return True
        if not is_outage(exc, message):
            return True
        outage(STATE_DATABASE).failed(exc if exc is not None else _error_line(message))
        return False


def _error_line(message: str) -> str:
    """The line of a logged traceback that names the error (its last ``...Error: ...``), else
    the message's first line."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    named = [line for line in lines if _ERROR_LINE.match(line)]
    return (named[-1] if named else lines[0] if lines else "unreachable")[:200]


_FILTER = DBOSOutageFilter()


def quiet_dbos_outages() -> None:
    """Install the filter on DBOS's logger (once per process; idempotent)."""
    logger = logging.getLogger("dbos")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
