"""One log line per change of a dependency's state, not one traceback per failed request.

``OutageLog(what, logger)`` is told of each attempt on a dependency (``failed(exc)`` /
``ok()``): the first failure after a success logs "<what> is down: <error>", the failures
after it are only counted, and the first success logs "<what> is back after N failed
attempts in T s". A 10 s outage of the state database is two lines per process, whatever
the number of heartbeats, listeners, publishers and requests that met it. Neither line
carries a traceback: the error's type and first line say what happened; a failure that is
not an outage (a bug) is the caller's to log in full.

``outage(what)`` returns the process's one ``OutageLog`` of ``what``, so the parts that reach
one dependency (the pipeline heartbeat and DBOS's pollers on the state database) share its
count. ``is_outage(exc)`` tells a dependency that cannot be reached (connection refused,
reset, timed out) from a failure that is a bug.
"""

from __future__ import annotations

import logging
import threading
import time

STATE_DATABASE = "the state database (pipelines)"
_LOGS: dict[str, OutageLog] = {}
_LOGS_LOCK = threading.Lock()


def describe(exc: BaseException) -> str:
    """The error's type and the first line of its message (no traceback, no second line)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


class OutageLog:
    def __init__(self, what: str, logger: logging.Logger) -> None:
        self.what = what
        self.logger = logger
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._failed = 0
        self.outages = 0  # how many times it went down (for tests and counters)

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, exc: BaseException | str) -> None:
        """One failed attempt; logs only when the dependency was up until now."""
        with self._lock:
            self._failed += 1
            if self._down_since is not None:
                return
            self._down_since = time.monotonic()
            self.outages += 1
        self.logger.warning("%s is down: %s", self.what, exc if isinstance(exc, str) else describe(exc))

    def ok(self) -> None:
        """One successful attempt; logs only when the dependency was down until now."""
        if self._down_since is None:  # the common case, without the lock
            return
        with self._lock:
            if self._down_since is None:
                return
            seconds, failed = time.monotonic() - self._down_since, self._failed
            self._down_since, self._failed = None, 0
        self.logger.warning("%s is back after %d failed attempt%s in %.1f s", self.what, failed,
                            "" if failed == 1 else "s", seconds)


def outage(what: str, logger: logging.Logger | None = None) -> OutageLog:
    """This process's ``OutageLog`` of ``what`` (made on first use)."""
    with _LOGS_LOCK:
        log = _LOGS.get(what)
        if log is None:
            log = _LOGS[what] = OutageLog(what, logger or logging.getLogger("baton.outages"))
        return log


_OUTAGE_NAMES = ("OperationalError", "InterfaceError", "ConnectionTimeout", "ConnectionFailure", "ConnectionError",
                 "ConnectionRefusedError", "ConnectionResetError", "BrokenPipeError", "TimeoutError")
_OUTAGE_WORDS = ("connection refused", "connection reset", "server closed the connection", "connection failed",
                 "could not connect", "connection timeout", "timeout expired", "the connection is closed",
                 "terminating connection", "connection to server")


def is_outage(exc: BaseException | None, message: str = "") -> bool:
    """Whether ``exc`` (or a log ``message``) says a dependency cannot be reached now, as
    opposed to a bug: by the exception's class names (SQLAlchemy, psycopg, redis, OSError)
    and, for a text only, by the words drivers use."""
    while exc is not None:
        if any(cls.__name__ in _OUTAGE_NAMES for cls in type(exc).__mro__):
            return True
        exc = exc.__cause__ or exc.__context__
    text = message.lower()
    return any(word in text for word in _OUTAGE_WORDS)
