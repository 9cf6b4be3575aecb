"""Idempotent turns: a turn asked with a key is stored once, however often it is sent.

Why: a turn whose write timed out (the state database hung) was answered 503 "not
recorded", yet its write was not cancelled and committed once the database came back; a
client that retried, as the 503 invites, stored it twice. With a key the outcome is
unambiguous: the key is claimed in the turn's own transaction (``baton_turn_keys``, primary
key ``(workspace, turn_key)``), so of a late commit and its retry whichever commits first
stores the turn and the other stores nothing (``TurnKeyTaken``) and answers with the stored
turn.

- A key is the client's (``Idempotency-Key`` header, or ``turn_id`` in the body or the MCP
  tool's arguments), at most ``MAX_KEY_CHARS`` printable ASCII characters, held
  ``KEY_RETENTION_S`` (24 h): the same key again within that window gets the stored answer
  and runs nothing. A keyless ``/v1/ask`` gets a key from the server (``NewKey``), returned
  in its 503.
- A keyless chat completion's key is derived from the request (``chat_key``): the caller's
  key id, the model and the messages, held ``CHAT_KEY_WINDOW_S`` (10 min). The ``openai``
  SDK retries 5xx and dropped connections with the same body and sends no key of its own
  (only ``x-stainless-retry-count``), so its retries find the stored turn. The same
  conversation sent again within the window is the same turn.
- A second request with the key of a turn still being answered *in this process* waits for
  that turn's outcome (``join``); on another replica it is answered again, and only the first
  of the two to commit is stored: both reply with the stored answer.
- ``TurnUnconfirmed`` (a ``DependencyUnavailable``, so a 503 with ``Retry-After``) carries
  the key and ``may_be_stored``: true when the turn's write was sent and its outcome is
  unknown. Retrying with the key is then safe; the chat endpoint also says
  ``x-should-retry: false`` so an SDK that would retry without a key does not.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from baton.errors import BatonError
from baton.ids import random_hex
from baton.state.bulkheads import DependencyUnavailable
from baton.state.driver_writes import first_row
from baton.store_backends import StoreBackend, backend_of

KEY_RETENTION_S = 86_400.0
CHAT_KEY_WINDOW_S = 600.0
MAX_KEY_CHARS = 100
KEY_HEADER = "Idempotency-Key"
T = TypeVar("T")

TURN_KEYS = sa.Table(
    "baton_turn_keys", sa.MetaData(),
    sa.Column("workspace", sa.String(200), primary_key=True),
    sa.Column("turn_key", sa.String(200), primary_key=True),
    sa.Column("turn_id", sa.String(64), nullable=False),
    sa.Column("session_id", sa.String(64), nullable=False),
    sa.Column("expires_at", sa.String(40), nullable=False),
)


class TurnKeyTaken(BatonError):
    """A turn with this key is already stored (``turn_id`` of ``session_id``): this one was not."""

    def __init__(self, key: str, turn_id: str, session_id: str) -> None:
        super().__init__(f"a turn with this key is already stored ({turn_id})")
        self.key = key
        self.turn_id = turn_id
        self.session_id = session_id


class TurnUnconfirmed(DependencyUnavailable):
    """The conversation store failed during a keyed turn: 503, with the key to retry with and
    whether this attempt's write may still commit."""

    def __init__(self, cause: DependencyUnavailable, key: str, may_be_stored: bool) -> None:
        super().__init__(cause.dependency, cause.reason)
        self.key = key
        self.may_be_stored = may_be_stored


class BadTurnKey(BatonError, ValueError):
    """An idempotency key that is empty, too long or not printable ASCII."""


def checked_key(key: str | None) -> str | None:
    if key is None:
        return None
    if not key or len(key) > MAX_KEY_CHARS or not all(" " < c < "\x7f" for c in key):
        raise BadTurnKey(f"an idempotency key is 1 to {MAX_KEY_CHARS} printable ASCII characters without spaces")
    return key


class NewKey(str):
    """A key the server made for a keyless request: no turn can hold it yet, so it is not
    looked up before the question is answered (one read fewer per question)."""


def new_key() -> NewKey:
    return NewKey(random_hex())


def chat_key(caller: str, model: str, messages: list[Any]) -> str:
    """The key of a keyless chat completion: a digest of who asked what of which model."""
    text = json.dumps([caller, model, messages], sort_keys=True, separators=(",", ":"), default=str)
    return "chat:" + hashlib.sha256(text.encode()).hexdigest()[:64]


@functools.cache
def _claim_statement(backend: StoreBackend) -> Any:
    """The claim's upsert on ``backend``, built once: building it per turn (its ``excluded``
    alias makes a copy of every column) cost about 0.3 ms of CPU per answered question; the
    values are bound at execution (``claim``)."""
    insert = backend.upsert(TURN_KEYS)
    return insert.values(
        workspace=sa.bindparam("claim_workspace"), turn_key=sa.bindparam("claim_key"), turn_id=sa.bindparam("claim_turn"),
        session_id=sa.bindparam("claim_session"), expires_at=sa.bindparam("claim_expires"),
    ).on_conflict_do_update(
        index_elements=[TURN_KEYS.c.workspace, TURN_KEYS.c.turn_key],
        set_={"turn_id": insert.excluded.turn_id, "session_id": insert.excluded.session_id,
              "expires_at": insert.excluded.expires_at},
        where=TURN_KEYS.c.expires_at < sa.bindparam("claim_now")).returning(TURN_KEYS.c.turn_id)


def claim(conn: Connection, workspace: str, key: str, turn_id: str, session_id: str, expires_at: str, now: str) -> TurnKeyTaken | None:
    """Claim ``key`` for ``turn_id`` in ``conn``'s transaction (a holder whose retention has
    ended is replaced); the holder when the key is taken. On PostgreSQL a claim meeting an
    uncommitted one waits for it to commit or roll back."""
    statement = _claim_statement(backend_of(conn))
    params = {"claim_workspace": workspace, "claim_key": key, "claim_turn": turn_id, "claim_session": session_id,
              "claim_expires": expires_at, "claim_now": now}
    if first_row(conn, statement, params) is not None:  # claimed (rowcount is -1 on psycopg for an upsert)
        return None
    holder = conn.execute(sa.select(TURN_KEYS.c.turn_id, TURN_KEYS.c.session_id).where(
        TURN_KEYS.c.workspace == workspace, TURN_KEYS.c.turn_key == key)).one()
    return TurnKeyTaken(key, holder[0], holder[1])


_running: dict[tuple[int, str, str], asyncio.Future[Any]] = {}


async def join(workspace: str, key: str | None, work: Callable[[], Awaitable[T]]) -> T:
    """``work()``, or, when a turn with ``key`` is already being answered in this process,
    that turn's outcome (the same answer, or the same failure)."""
    if key is None:
        return await work()
    loop = asyncio.get_running_loop()
    slot = (id(loop), workspace, key)
    running = _running.get(slot)
    if running is not None:
        try:
            result: T = await asyncio.shield(running)
        except asyncio.CancelledError:
            if not running.cancelled():
                raise  # this request was cancelled
            return await join(workspace, key, work)  # the first one's client left: answer it here
        return result
    future: asyncio.Future[Any] = loop.create_future()
    _running[slot] = future
    try:
        outcome = await work()
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError):
            future.cancel()
        else:
            future.set_exception(exc)
            future.exception()  # retrieved: no warning when nobody joined
        raise
    else:
        future.set_result(outcome)
        return outcome
    finally:
        del _running[slot]
