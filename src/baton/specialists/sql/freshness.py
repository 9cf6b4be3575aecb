"""How fresh a database's data is, and the warning an answer carries when it is not.

A freshness setting (``Freshness``, ``ConnectionOptions(freshness=...)``) says how to learn
when the data was last loaded — a query returning one timestamp, such as
``SELECT max(loaded_at) FROM etl_runs`` (``Freshness.column("etl_runs", "loaded_at", ...)``
writes that one) — and how old it may be (``max_age``). An answer whose SQL ran on that
database (model SQL, a verified question, a semantic query, a follow-up) then carries
``metadata["data_freshness"]`` when the load time is known, and, when the data is older
than ``max_age``, a ``staleness_warning`` saying so (before a stale-memory warning when
both apply).

The query is SQL like any other: it must pass the safety check when the connection is built
(``FreshnessQueryError`` otherwise: a write, several statements or a file-reading function
never get as far as a database), and it runs through ``SQLConnection.query`` — the same check
again, then the engine's read-only guard — with its own short statement timeout
(``timeout_s``) and one row.

What it costs an answer (``FreshnessProbe``): the result is kept ``cache_s`` seconds, so a
busy workspace runs the query about once a minute, not once per answer; one lookup at a time
per connection. The lookup starts when an answer starts (``start()``), so it overlaps with the
answer's own work; only while nothing has ever been learned does an answer wait for it, and
then at most ``timeout_s``. Afterwards answers use what the last lookup found while the next
one runs in the background. A lookup that fails (an error, a timeout, a NULL or a value that
is not a time) makes the data's age unknown until the next one: the answer carries no
freshness and no warning, and the log says why (one warning per ``WARN_EVERY_S``).

Times: a timestamp with a zone is converted to UTC; one without (SQLite text, PostgreSQL
``timestamp``, DuckDB ``TIMESTAMP``) is read as UTC; a date is its midnight UTC; a number is
seconds since the Unix epoch.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baton.errors import ConfigurationError

if TYPE_CHECKING:
    from baton.response import AIMessage, DataFreshness
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.safety import SafetyVerdict

log = logging.getLogger(__name__)

WARN_EVERY_S = 600.0  # at most one log warning per connection this often about failing lookups


@dataclass(frozen=True, slots=True)
class Freshness:
    """A database's freshness setting (module docstring): ``sql`` returns one timestamp, the
    time the data was last loaded; data older than ``max_age`` is stale."""

    sql: str
    max_age: dt.timedelta
    timeout_s: float = 2.0   # the lookup's statement timeout, and the longest an answer ever waits for it
    cache_s: float = 60.0    # how long a lookup's result is used before the next one

    def __post_init__(self) -> None:
        if not self.sql.strip():
            raise ConfigurationError("the freshness query is empty")
        if self.max_age <= dt.timedelta(0):
            raise ConfigurationError(f"the freshness max_age must be positive, not {self.max_age}")
        if self.timeout_s <= 0 or self.cache_s < 0:
            raise ConfigurationError("the freshness timeout_s must be positive and cache_s not negative")

    @classmethod
    def column(cls, table: str, column: str, max_age: dt.timedelta, **options: Any) -> Freshness:
        """``SELECT max(column) FROM table`` (``table`` may be ``schema.table``), the names
        quoted for any engine."""
        names = [*table.split("."), column]
        if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name) for name in names):
            raise ConfigurationError(f"freshness column {table}.{column} is not made of plain identifiers")
        *relation, field = (f'"{name}"' for name in names)
        return cls(f"SELECT max({field}) FROM {'.'.join(relation)}", max_age, **options)


class FreshnessQueryError(ConfigurationError):
    """A freshness query the safety check refuses, raised when the connection is built.
    ``verdict`` says why (its ``rule``: ``write_statement``, ``multiple_statements``,
    ``dangerous_function``, ...)."""

    def __init__(self, sql: str, verdict: SafetyVerdict) -> None:
        super().__init__(f"the freshness query is refused ({verdict.rule}): {verdict.reason}. "
                         f"It must be one read-only query returning one timestamp: {sql!r}")
        self.sql = sql
        self.verdict = verdict


@dataclass(frozen=True, slots=True)
class DataAge:
    """What a lookup learned: when the data was last loaded, judged at ``now``."""

    loaded_at: dt.datetime  # UTC
    max_age: dt.timedelta
    now: dt.datetime

    @property
    def age(self) -> dt.timedelta:
        return max(self.now - self.loaded_at, dt.timedelta(0))

    @property
    def stale(self) -> bool:
        return self.age > self.max_age

    def warning(self) -> str | None:
        """The answer's line when the data is stale, else None."""
        if not self.stale:
            return None
        return (f"The data was last loaded {duration(self.age)} ago ({self.loaded_at:%Y-%m-%d %H:%M} UTC), "
                f"older than this workspace's freshness limit of {duration(self.max_age)}.")

    def to_metadata(self) -> DataFreshness:
        return {"loaded_at": self.loaded_at.isoformat(), "age_s": round(self.age.total_seconds(), 3),
                "max_age_s": self.max_age.total_seconds(), "stale": self.stale}


class FreshnessProbe:
    """One connection's lookups and their cache (module docstring). Built by
    ``SQLConnection`` when its options hold a ``Freshness``; the query is checked here."""

    def __init__(self, connection: SQLConnection, freshness: Freshness, *,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        from baton.specialists.sql.safety import check_safety

        verdict = check_safety(freshness.sql, connection.dialect, relations=connection.relation_policy)
        if not verdict.safe:
            raise FreshnessQueryError(freshness.sql, verdict)
        self.connection = connection
        self.freshness = freshness
        self._clock = clock
        self._now = now
        self._loaded_at: dt.datetime | None = None
        self._looked_at: float | None = None  # when the last lookup ended (None: none has)
        self._task: asyncio.Task[None] | None = None
        self._warned_at: float | None = None

    def start(self) -> None:
        """Start a lookup in the background when the last one is older than ``cache_s``
        (and none is running). Needs a running loop; never raises."""
        if self._task is not None and not self._task.done() and self._task.get_loop() is asyncio.get_running_loop():
            return
        if self._looked_at is not None and self._clock() - self._looked_at < self.freshness.cache_s:
            return
        self._task = asyncio.get_running_loop().create_task(self._look_up(), name=f"baton-freshness-{self.connection.id}")

    async def current(self) -> DataAge | None:
        """The data's age as last learned (a lookup started if due), None when unknown. Waits
        for a lookup only while none has ever ended, and then at most ``timeout_s``."""
        self.start()
        task = self._task
        if self._looked_at is None and task is not None and not task.done():
            await asyncio.wait({task}, timeout=self.freshness.timeout_s)
        if self._loaded_at is None:
            return None
        return DataAge(self._loaded_at, self.freshness.max_age, self._now())

    async def _look_up(self) -> None:
        fresh = self.freshness
        try:
            # the engine stops the statement at timeout_s; the outer bound covers a connect that hangs
            result = await asyncio.wait_for(self.connection.query(fresh.sql, timeout_s=fresh.timeout_s, row_cap=1),
                                            fresh.timeout_s + 1.0)
            if not result.rows or not result.rows[0]:
                raise ValueError("it returned no rows")
            self._loaded_at = as_utc(result.rows[0][0])
        except Exception as exc:  # a freshness lookup never fails an answer: unknown, and the log says why
            self._loaded_at = None
            self._warn(exc)
        finally:
            self._looked_at = self._clock()

    def _warn(self, exc: Exception) -> None:
        at = self._clock()
        reason = f"timed out after {self.freshness.timeout_s:g} s" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
        if self._warned_at is None or at - self._warned_at >= WARN_EVERY_S:
            self._warned_at = at
            log.warning("freshness query on %s failed (%s): answers carry no freshness until it works; "
                        "this warning repeats at most every %d s", self.connection.id, reason, WARN_EVERY_S)
        else:
            log.debug("freshness query on %s failed (%s)", self.connection.id, reason)


def as_utc(value: Any) -> dt.datetime:
    """A lookup's value as an aware UTC datetime (module docstring); ValueError otherwise."""
    if value is None:
        raise ValueError("it returned NULL (no load recorded)")
    if isinstance(value, bool):
        raise ValueError(f"it returned {value!r}, not a time")
    if isinstance(value, (int, float)):
        return dt.datetime.fromtimestamp(value, dt.UTC)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"it returned {value!r}, not an ISO 8601 time") from None
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    raise ValueError(f"it returned a {type(value).__name__}, not a time")


def duration(span: dt.timedelta) -> str:
    """``span`` the way a person says it: 90 seconds, 45 minutes, 30 hours, 1 day, 3 days
    (rounded down)."""
    seconds = int(span.total_seconds())
    if seconds < 120:
        unit, size = "second", 1
    elif seconds < 2 * 3600:
        unit, size = "minute", 60
    elif seconds < 48 * 3600 and seconds % 86400:
        unit, size = "hour", 3600
    else:
        unit, size = "day", 86400
    count = seconds // size
    return f"{count} {unit}{'' if count == 1 else 's'}"


_AGE_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> dt.timedelta:
    """``90s``, ``30m``, ``12h``, ``1d``, ``2w`` or a sum such as ``1d12h``, as a timedelta
    (``--max-data-age``). ConfigurationError for anything else."""
    compact = re.sub(r"\s+", "", text)
    parts = _AGE_PART.findall(compact)
    if not compact or "".join(f"{n}{u}" for n, u in parts) != compact:
        raise ConfigurationError(f"{text!r} is not an age such as 90s, 30m, 12h, 1d, 2w or 1d12h")
    age = dt.timedelta(seconds=sum(float(n) * _UNITS[u.lower()] for n, u in parts))
    if age <= dt.timedelta(0):
        raise ConfigurationError(f"the age {text!r} must be positive")
    return age


async def mark_freshness(message: AIMessage, connection: SQLConnection) -> None:
    """Put what is known of ``connection``'s data age on ``message`` (an answer whose SQL ran
    there): ``metadata["data_freshness"]``, and when stale the warning, before any other."""
    probe = connection.freshness
    if probe is None:
        return
    age = await probe.current()
    if age is None:
        return
    message.meta["data_freshness"] = age.to_metadata()
    warning = age.warning()
    if warning:
        message.staleness_warning = " ".join(w for w in (warning, message.staleness_warning) if w)
