"""Worker heartbeats, and taking over the pipelines of a worker that died.

Open-source DBOS recovers a process's unfinished workflows only when a process with the
*same executor id* starts again. A worker that dies for good (a lost machine, a killed pod
with a fresh id) would strand its pipelines, so each worker keeps a heartbeat and watches
the others'.

The table ``baton_pipeline_workers`` (in the system database, in the DBOS schema on
PostgreSQL) holds one row per worker: ``executor_id``, ``queue_name``, a ``beat`` counter,
its wall-clock time (for people) and ``claimed_by``. Every ``heartbeat_interval_s`` a worker
increments its counter and looks at the other workers on its queue. Liveness is judged by
*the counter not moving* for ``heartbeat_lapse_s`` of the watcher's own monotonic clock, so
clocks of different machines never need to agree. A watcher that sees a lapse claims the
dead worker with one conditional UPDATE (``claimed_by IS NULL AND beat = <seen>``): exactly
one live worker wins, even with many watching. The winner lists the dead executor's PENDING
workflows of this application version and resumes each onto the queue
(``DBOS.resume_workflow(id, queue_name=...)``), where any live worker dequeues it and DBOS
replays it from its last completed step; then the dead worker's row is deleted. A watcher
that dies between its claim and that deletion leaves rows claimed by a dead worker; whoever
takes over the dead watcher inherits those claims and finishes them.

While the database is away the heartbeat says so once ("... is down"), and once when it is
back, with the count of failed beats (``baton.outages``), never a traceback per beat.

A worker that was only slow (a pause longer than the lapse) and comes back finds its row
claimed; it re-registers and carries on, and a stage it had in flight may run twice: stages
are at-least-once anyway.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import sqlalchemy as sa

from baton.outages import STATE_DATABASE, is_outage, outage

log = logging.getLogger("baton.pipeline.durable")

TABLE_NAME = "baton_pipeline_workers"


def workers_table(metadata: sa.MetaData, schema: str | None) -> sa.Table:
    return sa.Table(
        TABLE_NAME,
        metadata,
        sa.Column("executor_id", sa.String(255), primary_key=True),
        sa.Column("queue_name", sa.String(255), nullable=False),
        sa.Column("beat", sa.BigInteger, nullable=False),
        sa.Column("beat_at", sa.Float, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("claimed_by", sa.String(255), nullable=True),
        schema=schema,
    )


class Heartbeat:
    """Beats for ``executor_id`` and takes over lapsed workers on ``queue_name``.

    ``take_over(dead_executor_id) -> int`` resumes the dead worker's pipelines and returns
    how many; it is given by the worker (it needs the launched DBOS)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None,
        executor_id: str,
        queue_name: str,
        interval_s: float,
        lapse_s: float,
        take_over: Callable[[str], int],
    ) -> None:
        self.engine = sa.create_engine(url, pool_pre_ping=True)
        self.table = workers_table(sa.MetaData(), schema)
        self.executor_id = executor_id
        self.queue_name = queue_name
        self.interval_s = interval_s
        self.lapse_s = lapse_s
        self.take_over = take_over
        self.taken_over: list[str] = []
        self._seen: dict[str, tuple[int, float]] = {}  # executor -> (beat, monotonic time it was first seen at that beat)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._beat = 0

    def start(self) -> None:
        self.table.create(self.engine, checkfirst=True)
        self._register()
        self._thread = threading.Thread(target=self._loop, name=f"baton-heartbeat-{self.executor_id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, self.interval_s * 2))
        self.engine.dispose()

    def _register(self) -> None:
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(sa.delete(self.table).where(self.table.c.executor_id == self.executor_id))
            conn.execute(sa.insert(self.table).values(
                executor_id=self.executor_id, queue_name=self.queue_name, beat=0, beat_at=now, started_at=now, claimed_by=None,
            ))
        self._beat = 0

    def _loop(self) -> None:
        state_database = outage(STATE_DATABASE)  # one line down, one line back (baton.outages)
        while not self._stop.wait(self.interval_s):
            try:
                self.beat()
                self.watch()
            except Exception as exc:  # a database hiccup must not kill the heartbeat thread
                if is_outage(exc):
                    state_database.failed(exc)
                else:
                    log.warning("pipeline heartbeat failed; retrying", exc_info=True)
            else:
                state_database.ok()

    def beat(self) -> None:
        self._beat += 1
        with self.engine.begin() as conn:
            updated = conn.execute(
                sa.update(self.table)
                .where(self.table.c.executor_id == self.executor_id, self.table.c.claimed_by.is_(None))
                .values(beat=self._beat, beat_at=time.time())
            ).rowcount
        if updated == 0:
            log.warning("worker %s was taken for dead by another worker; registering again", self.executor_id)
            self._register()

    def watch(self) -> None:
        now = time.monotonic()
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(self.table.c.executor_id, self.table.c.beat).where(
                    self.table.c.queue_name == self.queue_name,
                    self.table.c.executor_id != self.executor_id,
                    self.table.c.claimed_by.is_(None),
                )
            ).all()
        alive = {r.executor_id for r in rows}
        self._seen = {k: v for k, v in self._seen.items() if k in alive}
        for executor_id, beat in rows:
            seen = self._seen.get(executor_id)
            if seen is None or seen[0] != beat:
                self._seen[executor_id] = (beat, now)
            elif now - seen[1] >= self.lapse_s:
                self._claim(executor_id, beat)

    def _claim(self, executor_id: str, beat: int) -> None:
        with self.engine.begin() as conn:
            won = conn.execute(
                sa.update(self.table)
                .where(self.table.c.executor_id == executor_id, self.table.c.beat == beat, self.table.c.claimed_by.is_(None))
                .values(claimed_by=self.executor_id)
            ).rowcount
            if not won:
                return
            # what the dead worker had itself claimed and not finished taking over (it died
            # mid-takeover) is ours now too, else nobody would ever look at it again
            inherited = [r.executor_id for r in conn.execute(
                sa.select(self.table.c.executor_id).where(self.table.c.claimed_by == executor_id)
            )]
            if inherited:
                conn.execute(sa.update(self.table).where(self.table.c.claimed_by == executor_id).values(claimed_by=self.executor_id))
        todo = [executor_id, *inherited]
        while todo:
            dead = todo[0]
            try:
                resumed = self.take_over(dead)
            except Exception:
                with self.engine.begin() as conn:  # let the next watch (ours or another's) try again
                    conn.execute(sa.update(self.table).where(
                        self.table.c.executor_id.in_(todo), self.table.c.claimed_by == self.executor_id,
                    ).values(claimed_by=None))
                raise
            log.warning("worker %s took over %d pipeline(s) of lapsed worker %s", self.executor_id, resumed, dead)
            with self.engine.begin() as conn:
                conn.execute(sa.delete(self.table).where(self.table.c.executor_id == dead, self.table.c.claimed_by == self.executor_id))
            self._seen.pop(dead, None)
            self.taken_over.append(dead)
            todo.pop(0)
