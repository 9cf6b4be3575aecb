"""Every run's events in order: a per-run sequence number, stored before the event is relayed.

Why: a stream reader that attaches late (right after the 202, on another replica, or
reconnecting with ``Last-Event-ID``) must see exactly the run's history and then its live
events, in order, with no gaps and no repeats. The DBOS stream (``workflow.py``) is written
once per phase, so it cannot serve a reader in the middle of one; this log is written as
events happen.

The table ``baton_run_events`` (system database; DBOS's schema on PostgreSQL, next to the
heartbeat table) holds ``(workflow_id, seq)`` -> ``attempt``, ``event`` (JSON). A worker's
``RunLogWriter`` is the only thing that numbers events: one thread takes what the run emits,
numbers the batch (``seq`` continues after the last stored one), inserts it in one
transaction, and only then relays each event live (``relay``). So whatever a reader
receives live is already stored, and everything stored before it has a smaller ``seq``: a
reader that subscribes, then reads the log, then merges by ``seq`` misses nothing.

``attempt``: each time the workflow function starts (the first run, or DBOS replaying it
after a takeover or restart), ``begin`` opens a new attempt; its events (a replayed
``stage.start`` included) get new numbers after the old ones, so history is never reordered.

``llm.token`` events are not numbered or stored (one per streamed token would bloat the
log); they are relayed in order with ``after_seq``, the number of the event before them, so a
reader shows them only when it is caught up to exactly that point.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

log = logging.getLogger("baton.pipeline.durable")
TABLE_NAME = "baton_run_events"
UNNUMBERED = ("llm.token",)
BATCH = 500
RETRY_FOR_S = 30.0
Item = tuple[str, str, "dict[str, Any] | None"]  # (workflow id, "begin" | "event" | "end", event)


def run_events_table(metadata: sa.MetaData, schema: str | None) -> sa.Table:
    return sa.Table(
        TABLE_NAME,
        metadata,
        sa.Column("workflow_id", sa.String(255), primary_key=True),
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("event", sa.Text, nullable=False),
        schema=schema,
    )


class RunLog:
    """The stored events of runs (read by any process; written by ``RunLogWriter``)."""

    def __init__(self, url: str, schema: str | None) -> None:
        self.engine = sa.create_engine(url, pool_pre_ping=True)
        self.table = run_events_table(sa.MetaData(), schema)
        self._ready = False

    def ensure(self) -> RunLog:
        if not self._ready:
            try:
                self.table.create(self.engine, checkfirst=True)
            except sa.exc.DBAPIError:  # another process created it at the same moment
                if not sa.inspect(self.engine).has_table(TABLE_NAME, schema=self.table.schema):
                    raise
            self._ready = True
        return self

    def read(self, workflow_id: str, *, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """The run's stored events with ``seq`` above ``after``, in order."""
        self.ensure()
        t = self.table
        query = sa.select(t.c.event).where(t.c.workflow_id == workflow_id, t.c.seq > after).order_by(t.c.seq)
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [json.loads(row[0]) for row in conn.execute(query)]

    def last(self, conn: sa.Connection, workflow_id: str) -> tuple[int, int]:
        """(the run's highest ``seq``, its highest ``attempt``), 0 for none."""
        t = self.table
        row = conn.execute(sa.select(sa.func.max(t.c.seq), sa.func.max(t.c.attempt)).where(t.c.workflow_id == workflow_id)).one()
        return int(row[0] or 0), int(row[1] or 0)

    def close(self) -> None:
        self.engine.dispose()


class RunLogWriter:
    """Numbers, stores, then relays a worker's run events (module docstring). ``emit`` never
    blocks and never raises: events are progress, never a run's failure."""

    def __init__(self, run_log: RunLog, relay: Callable[[str, dict], None] | None = None) -> None:
        self.log = run_log
        self.relay = relay
        self._queue: queue.Queue[Item | None] = queue.Queue(maxsize=100_000)
        self._runs: dict[str, list[int]] = {}  # workflow -> [last seq, attempt] of runs numbered here
        self._fresh: set[str] = set()  # runs whose next event opens a new attempt
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failing = False
        self._closing = threading.Event()

    def begin(self, workflow_id: str) -> None:
        """The workflow function (re)started: what follows is a new attempt."""
        self._put((workflow_id, "begin", None))

    def emit(self, workflow_id: str, event: dict[str, Any]) -> None:
        self._put((workflow_id, "event", event))

    def end(self, workflow_id: str) -> None:
        """The run's attempt ended here: its numbering need not be kept (the store has it)."""
        self._put((workflow_id, "end", None))

    def _put(self, item: Item) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="baton-run-log", daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            log.warning("run event log queue full: an event of %s was dropped", item[0])

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            items = [first]
            stop = False
            while len(items) < BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                items.append(item)
            self._write_retrying(items)
            if stop:
                return

    def _write_retrying(self, items: list[Item]) -> None:
        """Store (then relay) ``items``, retrying with backoff while the database is away, for
        up to ``RETRY_FOR_S``; then drop them (never numbered: no gap). One log line when
        writes start failing, one when they work again."""
        delay, deadline = 0.1, time.monotonic() + RETRY_FOR_S
        while True:
            try:
                self._write(items)
            except Exception as exc:
                self._runs.clear()  # numbering restarts from what is stored
                if not self._failing:
                    self._failing = True
                    log.warning("storing run events failed (%s: %s); retrying", type(exc).__name__, str(exc).splitlines()[0][:200])
                if time.monotonic() + delay > deadline or self._closing.is_set():
                    log.warning("%d run events were dropped: the database did not take them for %g s", len(items), RETRY_FOR_S)
                    return
                self._closing.wait(delay)
                delay = min(delay * 2, 2.0)
                continue
            if self._failing:
                self._failing = False
                log.warning("storing run events works again")
            return

    def _write(self, items: list[Item]) -> None:
        self.log.ensure()
        for tries in range(3):
            try:
                out, numbering, fresh = self._store(items)
                break
            except sa.exc.IntegrityError:  # another writer numbered one of these runs (a worker that was only slow)
                self._runs = {}
                if tries == 2:
                    raise
        self._runs, self._fresh = numbering, fresh
        if self.relay is not None:
            for wid, event in out:
                try:
                    self.relay(wid, event)
                except Exception:
                    log.warning("relaying a run event failed", exc_info=True)

    def _store(self, items: list[Item]) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, list[int]], set[str]]:
        """Number ``items`` and insert them in one transaction: (what to relay, the new
        numbering, the runs still waiting for their new attempt's first event)."""
        rows: list[dict[str, Any]] = []
        out: list[tuple[str, dict[str, Any]]] = []
        numbering = {wid: list(state) for wid, state in self._runs.items()}
        fresh = set(self._fresh)
        ended: set[str] = set()
        with contextlib.ExitStack() as stack:
            conn: sa.Connection | None = None  # opened only when needed: a batch of tokens touches no database

            def connection() -> sa.Connection:
                nonlocal conn
                if conn is None:
                    conn = stack.enter_context(self.log.engine.begin())
                return conn

            for wid, kind, event in items:
                if kind != "event" or event is None:
                    if kind == "begin":
                        fresh.add(wid)
                        ended.discard(wid)
                    else:
                        ended.add(wid)
                    continue
                if wid not in numbering:
                    numbering[wid] = list(self.log.last(connection(), wid))
                state = numbering[wid]
                if wid in fresh or state[1] == 0:  # the first event of an attempt
                    state[1] += 1
                    fresh.discard(wid)
                if event.get("type") in UNNUMBERED:
                    out.append((wid, {**event, "after_seq": state[0]}))
                    continue
                state[0] += 1
                numbered = {**event, "data": {**(event.get("data") or {}), "seq": state[0], "attempt": state[1]}}
                rows.append({"workflow_id": wid, "seq": state[0], "attempt": state[1], "event": json.dumps(numbered, default=str)})
                out.append((wid, numbered))
            if rows:
                connection().execute(sa.insert(self.log.table), rows)
        for wid in ended:
            numbering.pop(wid, None)
            fresh.discard(wid)
        return out, numbering, fresh

    def close(self, timeout: float = 5.0) -> None:
        with self._lock:
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)
            self._closing.set()  # a write still retrying gives up
            thread.join(1.0)
        self.log.close()
