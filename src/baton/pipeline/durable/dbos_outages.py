"""DBOS's pollers (notifications, workflow events, schedules, queues) log a warning, often with
a traceback, at every poll that fails: several a second for as long as the state database is
away, in every process. ``quiet_dbos_outages()`` puts a filter on DBOS's logger that folds
each record saying the database cannot be reached into the process's one ``OutageLog`` of
the state database (``baton.outages``), which the heartbeat feeds too and which says when it
is back: an outage is one line down and one line back. Other DBOS records pass unchanged.
"""

from __future__ import annotations

import logging

from baton.outages import STATE_DATABASE, is_outage, outage


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
        outage(STATE_DATABASE).failed(exc if exc is not None else message.strip().splitlines()[-1][:200])
        return False


_FILTER = DBOSOutageFilter()


def quiet_dbos_outages() -> None:
    """Install the filter on DBOS's logger (once per process; idempotent)."""
    logger = logging.getLogger("dbos")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
