"""A TCP proxy that injects faults between Baton and a database server (asyncio, in its own
thread, so the code under test runs on its own loop unaware of it).

Modes (``proxy.mode = ...``, effective at once for every connection):

- ``pass``: bytes flow both ways untouched;
- ``freeze``: connections stay open but no byte moves either way (a hung server, a
  partitioned network: the worst case, since the client's kernel sees nothing wrong);
- ``drop``: every open connection is reset and new ones are closed as they arrive;
- ``slow``: each chunk waits ``delay_s`` before it is forwarded.

Going back to ``pass`` releases frozen bytes in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import sqlalchemy as sa


class FaultProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.mode = "pass"
        self.delay_s = 0.2
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._moved = None  # asyncio.Event set whenever the mode changes

    # --- control (any thread) -----------------------------------------------------------------

    def start(self) -> FaultProxy:
        self._thread.start()
        self._ready.wait(5)
        return self

    def set(self, mode: str) -> None:
        assert mode in ("pass", "freeze", "drop", "slow")
        self.mode = mode
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._changed)

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._shutdown)
        self._thread.join(5)

    def url_for(self, url: str) -> str:
        """``url`` (a database URL of the target) going through this proxy instead."""
        return sa.make_url(url).set(host="127.0.0.1", port=self.port).render_as_string(hide_password=False)

    # --- inside (the proxy's loop) --------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._moved = asyncio.Event()
        self._server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        loop.run_forever()
        loop.close()

    def _changed(self) -> None:
        assert self._moved is not None
        self._moved.set()
        self._moved = asyncio.Event()
        if self.mode == "drop":
            for writer in list(self._writers):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            self._writers.clear()

    def _shutdown(self) -> None:
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                writer.transport.abort()
        if self._server is not None:
            self._server.close()
        assert self._loop is not None
        self._loop.call_later(0.05, self._loop.stop)

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self.mode == "drop":
            client_writer.transport.abort()
            return
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.transport.abort()
            return
        self._writers.update((client_writer, server_writer))
        await asyncio.gather(self._pipe(client_reader, server_writer), self._pipe(server_reader, client_writer),
                             return_exceptions=True)
        for writer in (client_writer, server_writer):
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                with contextlib.suppress(Exception):
                    writer.write_eof()
                return
            while self.mode == "freeze":
                assert self._moved is not None
                await self._moved.wait()
            if self.mode == "drop":
                raise ConnectionResetError("dropped by the fault proxy")
            if self.mode == "slow":
                await asyncio.sleep(self.delay_s)
            writer.write(data)
            await writer.drain()


@contextlib.contextmanager
def proxied(url: str) -> Iterator[tuple[FaultProxy, str]]:
    """A started proxy in front of the server of ``url``, and ``url`` through it."""
    parts = urlsplit(sa.make_url(url).render_as_string(hide_password=False))
    proxy = FaultProxy(parts.hostname or "127.0.0.1", parts.port or 5432).start()
    try:
        yield proxy, proxy.url_for(url)
    finally:
        proxy.stop()
