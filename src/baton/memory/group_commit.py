"""Group commit for memory writes: the writes of one workspace that arrive while one of its
transactions is being committed go together in the next transaction.

Why: the journal is one hash chain per workspace, so its appends are serialised per
workspace (``Journal.lock_workspace``: an advisory lock on PostgreSQL, ``BEGIN IMMEDIATE``
on SQLite). One transaction per write meant every write of every replica queued on that
lock, each paying a lock wait and a commit: at ~87 answers/s on 3 replicas the insight and
usage writes fell behind and were dropped, and each added replica made the queue longer.
Committed in groups, a replica takes the lock once per group, and the number of
transactions follows the number of replicas, not the number of writes.

What a write keeps: its operation runs on the group's connection, after the operations
queued before it (submission order, so the order of a record's events is the order its
writers called), inside a savepoint of its own: an operation that raises (a stale version,
an invalid record) rolls back alone and its caller gets its exception; the others commit.
An operation that collides on the journal's unique constraint is re-run in a new savepoint
(``attempts`` times). A failure of the transaction itself (the database gone, a commit
refused) fails every write of the group with ``MemoryUnavailableError``; nothing of the group
was written.

No thread of its own: the first writer of an idle workspace leads (runs the group its own
write is in); writers arriving meanwhile wait, and when the group is committed the oldest
of them leads the next one. A leader writes at most ``MAX_GROUP`` operations, so no caller
waits behind an unbounded transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, OperationalError

from baton.memory.errors import MemoryUnavailableError

MAX_GROUP = 128


@dataclass(eq=False)
class _Write:
    op: Callable[[Connection], Any]
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False
    finished: bool = False
    result: Any = None
    error: BaseException | None = None

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        self.result, self.error, self.finished = result, error, True
        self.done.set()


class GroupCommit:
    """``run(key, op)``: ``op(conn)`` in the next group transaction of ``key`` (a workspace);
    returns its result or raises its exception. ``transaction(key)`` opens the group's
    connection and transaction (a context manager yielding the ``Connection``, its lock taken).
    ``totals`` counts groups, writes committed and writes failed with their group."""

    def __init__(self, transaction: Callable[[str], Any], *, attempts: int = 5) -> None:
        self._transaction = transaction
        self._attempts = attempts
        self._lock = threading.Lock()
        self._queues: dict[str, list[_Write]] = {}
        self.totals = {"groups": 0, "committed": 0, "failed": 0}

    def run(self, key: str, op: Callable[[Connection], Any]) -> Any:
        write = _Write(op)
        with self._lock:
            queue = self._queues.get(key)
            if queue is None:  # idle: this writer leads
                self._queues[key] = [write]
                write.lead = True
            else:
                queue.append(write)
        if not write.lead:
            write.done.wait()  # woken with its result, or to lead the next group
        if not write.finished:
            self._lead(key)
        if write.error is not None:
            raise write.error
        return write.result

    def _lead(self, key: str) -> None:
        with self._lock:
            queue = self._queues[key]
            group, queue[:] = queue[:MAX_GROUP], queue[MAX_GROUP:]
        try:
            self._commit(key, group)
        finally:
            for write in group:  # a BaseException (KeyboardInterrupt) left some unanswered: never strand them
                if not write.finished:
                    write.finish(error=MemoryUnavailableError("the group commit was interrupted; nothing was written"))
            with self._lock:
                queue = self._queues[key]
                if queue:  # hand over: the oldest waiting writer leads the next group
                    queue[0].lead = True
                    queue[0].done.set()
                else:
                    del self._queues[key]

    def _commit(self, key: str, group: list[_Write]) -> None:
        outcomes: list[tuple[_Write, Any, BaseException | None]] = []
        try:
            with self._transaction(key) as conn:
                for write in group:
                    outcomes.append((write, *self._one(conn, write)))
        except OperationalError as exc:  # the database is gone, or refused the commit
            self._fail(group, MemoryUnavailableError(f"memory database unavailable: {exc.orig or exc}"), exc)
            return
        except IntegrityError as exc:  # refused at commit (a deferred constraint): nothing of the group was written
            self._fail(group, MemoryUnavailableError("the memory journal refused the group; nothing was written"), exc)
            return
        except MemoryUnavailableError as exc:
            self._fail(group, exc, None)
            return
        with self._lock:
            self.totals["groups"] += 1
            self.totals["committed"] += len(group)
        for write, result, error in outcomes:
            write.finish(result, error)

    def _fail(self, group: list[_Write], error: MemoryUnavailableError, cause: BaseException | None) -> None:
        with self._lock:
            self.totals["failed"] += len(group)
        for write in group:
            failure = MemoryUnavailableError(str(error))
            failure.__cause__ = cause
            write.finish(error=failure)

    def _one(self, conn: Connection, write: _Write) -> tuple[Any, BaseException | None]:
        """One write in its own savepoint: (result, None), or (None, what it raised)."""
        for attempt in range(self._attempts):
            savepoint = conn.begin_nested()
            try:
                result = write.op(conn)
            except IntegrityError as exc:  # a racing writer took the chain position: re-read and retry
                savepoint.rollback()
                if attempt == self._attempts - 1:
                    error = MemoryUnavailableError(f"concurrent writers collided {self._attempts} times; nothing was written")
                    error.__cause__ = exc
                    return None, error
                continue
            except OperationalError:
                raise  # the connection is unusable: the whole group fails
            except Exception as exc:  # this write's own refusal: it alone rolls back
                savepoint.rollback()
                return None, exc
            savepoint.commit()
            return result, None
        raise AssertionError("unreachable")
