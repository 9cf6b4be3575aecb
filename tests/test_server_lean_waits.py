"""The small waits an open stream holds for its whole life: ``EventLine`` (a streamed
question's events, instead of ``asyncio.Queue``) and ``Signal`` (uvicorn's per-connection and
per-request events, instead of ``asyncio.Event``). They must behave like what they replace
where Baton and uvicorn use them: order, waking, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from baton.events import QueueTracker
from baton.events.base import Event
from baton.server.connections import Signal


def _event(n: int) -> Event:
    return Event(workflow_id=f"e{n}")


async def test_an_event_line_gives_its_events_in_order_and_waits_for_the_next():
    tracker = QueueTracker()
    line = tracker.queue
    assert line.empty()
    with pytest.raises(asyncio.QueueEmpty):
        line.get_nowait()
    tracker.emit(_event(1))
    tracker.emit(_event(2))
    assert line.qsize() == 2
    assert (await line.get()).workflow_id == "e1"
    waiting = asyncio.ensure_future(line.get())
    assert (await waiting).workflow_id == "e2"
    waiting = asyncio.ensure_future(line.get())
    await asyncio.sleep(0)
    assert not waiting.done()  # nothing yet: it waits
    tracker.close()
    assert await waiting is None  # the end


async def test_a_cancelled_wait_leaves_the_event_line_usable():
    tracker = QueueTracker()
    waiting = asyncio.ensure_future(tracker.queue.get())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    tracker.emit(_event(3))
    assert (await tracker.queue.get()).workflow_id == "e3"


async def test_a_signal_wakes_every_waiter_and_a_set_one_does_not_wait():
    signal = Signal()
    assert not signal.is_set()
    waiters = [asyncio.ensure_future(signal.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiters)
    signal.set()
    assert await asyncio.gather(*waiters) == [True, True, True]
    assert await signal.wait() is True  # set: at once
    signal.clear()
    assert not signal.is_set()
    assert Signal(True).is_set()


async def test_a_cancelled_signal_waiter_does_not_disturb_the_others():
    signal = Signal()
    gone, stays = asyncio.ensure_future(signal.wait()), asyncio.ensure_future(signal.wait())
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    signal.set()
    assert await stays is True
