"""The HTTP side of the provider SDKs: which transport they use, and one client per event loop.

Why aiohttp: the SDKs' default transport (httpx over httpcore) parses HTTP in Python and,
on every request and every release, probes the socket of each idle pooled connection, so its
CPU per call grows with the pool. The SDKs ship an aiohttp transport of their own
(``DefaultAioHttpClient``, the ``aiohttp`` extra): on ``bench/server_throughput.py`` it
took a pass-through model question from 6.1-7.5 to 4.9-5.0 ms of server CPU at 50
concurrent questions. It is the default when installed; ``BATON_LLM_TRANSPORT=httpx`` keeps
the SDK's own.

Why one client per loop: an aiohttp session, and an httpx pool's connections, belong to the
event loop they were opened on; used from another loop they fail (``attached to a different
loop``, ``Event loop is closed``). A model built once and used from several loops (one CLI
command after another, a test, a worker thread) gets a client for each, made on first use
there. A client whose loop has ended without ``aclose`` is dropped (its sockets go with it).
An injected client is used as given, on whatever loop calls it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, Generic, Protocol, TypeVar

from baton.settings import TRANSPORTS, Settings

__all__ = ["TRANSPORTS", "LoopClients", "sdk_http_client", "transport_choice"]
CLOSE_ELSEWHERE_S = 2.0  # aclose waits this long for a client to close on another thread's loop


class _Closable(Protocol):
    async def close(self) -> None: ...


Client = TypeVar("Client", bound=_Closable)


def transport_choice(env: Mapping[str, str] | None = None) -> str:
    """``BATON_LLM_TRANSPORT`` (``aiohttp`` by default, or ``httpx``) of ``Settings.from_env(env)``."""
    return Settings.from_env(env).llm_transport


def sdk_http_client(sdk: ModuleType, transport: str | None = None) -> Any | None:
    """An ``http_client`` for a new client of ``sdk`` (``openai`` or ``anthropic``): the SDK's
    aiohttp client when ``transport`` (default: ``transport_choice()``) is aiohttp and it is
    installed, else None (the SDK's default transport). Called once per client, never per call."""
    if (transport or transport_choice()) != "aiohttp":
        return None
    factory = getattr(sdk, "DefaultAioHttpClient", None)
    if factory is None:  # an SDK older than its aiohttp transport
        return None
    try:
        return factory()
    except RuntimeError:  # the SDK's stand-in when aiohttp is not installed
        return None


class LoopClients(Generic[Client]):
    """The SDK client of the running event loop: ``first`` on the loop that uses it first,
    one from ``fresh()`` on each other loop. With ``fresh=None`` (an injected client),
    ``first`` everywhere. Outside a running loop (reading ``api_key``): ``first``."""

    def __init__(self, first: Client, fresh: Callable[[], Client] | None) -> None:
        self.first = first
        self._fresh = fresh
        self._by_loop: dict[asyncio.AbstractEventLoop, Client] = {}
        self._first_taken = False
        self._lock = threading.Lock()

    def current(self) -> Client:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self.first
        client = self._by_loop.get(loop)
        return client if client is not None else self._bind(loop)

    def _bind(self, loop: asyncio.AbstractEventLoop) -> Client:
        if self._fresh is None:
            return self.first
        with self._lock:  # two loops' threads binding at once must not both take ``first``
            live = {other: client for other, client in self._by_loop.items() if not other.is_closed()}
            client = self._fresh() if self._first_taken else self.first
            self._first_taken = True
            self._by_loop = {**live, loop: client}  # replaced whole: other threads read it without the lock
            return client

    async def aclose(self) -> None:
        """Close every client (the model is done: call it once, when no loop uses it any
        more): the running loop's here, another running loop's on its own thread (a durable
        worker's loop), ``first`` if no loop took it (or it was injected). A client whose loop
        has stopped cannot be closed any more and is dropped."""
        here = asyncio.get_running_loop()
        clients, self._by_loop = self._by_loop, {}
        closing = [client for loop, client in clients.items() if loop is here]
        if not self._first_taken and all(client is not self.first for client in closing):
            closing.append(self.first)
        for client in closing:
            await client.close()
        for loop, client in clients.items():
            if loop is not here and loop.is_running():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.wrap_future(asyncio.run_coroutine_threadsafe(client.close(), loop)),
                                           CLOSE_ELSEWHERE_S)
