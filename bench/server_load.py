"""The load generator of ``server_throughput.py``: a minimal keep-alive HTTP/1.1 client,
closed-loop load (one key or several, one kind of question or a mix), clients that trickle
their headers, and open streams."""

from __future__ import annotations

import asyncio
import json
import resource
import time
from dataclasses import dataclass, field


@dataclass
class Outcome:
    """One load's results in its measuring window: latencies of the questions asked in it and
    answered (whenever: a slow last answer is not left out), how many answers arrived in it,
    refusals (503) with their ``Retry-After`` values, failures (anything else, or a broken
    connection); and the refusals met before the window opened (while clients were starting)."""

    latencies: list[float] = field(default_factory=list)
    answered: int = 0
    refused: int = 0
    failed: int = 0
    retry_after: list[int] = field(default_factory=list)
    refused_before: int = 0

    @property
    def asked(self) -> int:
        return len(self.latencies) + self.refused + self.failed


@dataclass(frozen=True)
class Window:
    """When a load is measured (``time.monotonic``): clients start over ``ramp_s`` from
    ``started`` (a steady arrival rate, as users arrive, not all in the same millisecond),
    answers and refusals count from ``opens`` (once every client has had a whole chain) to
    ``closes``. A ``ramp_s`` of 0 with ``opens == started`` is a burst: all at once."""

    started: float
    ramp_s: float
    opens: float
    closes: float
    tail: bool = False  # count the answers arriving after it closes (a burst's whole last round)

    @classmethod
    def after(cls, ramp_s: float, warmup_s: float, seconds: float, tail: bool = False) -> Window:
        started = time.monotonic()
        return cls(started, ramp_s, started + warmup_s, started + warmup_s + seconds, tail)


class Client:
    def __init__(self, port: int, key: str) -> None:
        self.port = port
        self.key = key.encode()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def ask(self, question: str, path: str = "/v1/ask") -> tuple[int, dict[bytes, bytes]]:
        """One request; on a kept-alive connection the server closed meanwhile (its keep-alive
        timeout passed while this client waited a ``Retry-After``), once more on a new one, as
        HTTP clients do."""
        reused = self.writer is not None
        try:
            return await self._ask(question, path)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.close()
            if not reused:
                raise
        return await self._ask(question, path)

    async def _ask(self, question: str, path: str) -> tuple[int, dict[bytes, bytes]]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        body = json.dumps({"question": question}).encode()
        self.writer.write(b"POST " + path.encode() + b" HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
                          b"authorization: Bearer " + self.key + b"\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        await self.writer.drain()
        assert self.reader is not None
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        headers = {}
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            headers[name.lower()] = value.strip()
        await self.reader.readexactly(int(headers.get(b"content-length", b"0")))
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()
        return status, headers

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def load(port: int, question: str, concurrency: int, window: Window | float, key: str) -> Outcome:
    """``concurrency`` clients, each asking its next question when its answer arrives, started
    evenly over the window's ramp, until it closes (a number: a burst for that many seconds,
    its last answers counted); a refused client waits its ``Retry-After``, as a well-behaved
    one does. Answers and refusals count when they arrive inside the window (rates over its
    seconds are steady); latencies are those of the questions asked inside it."""
    if not isinstance(window, Window):
        window = Window.after(0.0, 0.0, window, tail=True)
    outcome = Outcome()
    stop = window.closes

    async def one_client(n: int) -> None:
        await asyncio.sleep(max(0.0, window.started + window.ramp_s * n / concurrency - time.monotonic()))
        client = Client(port, key)
        try:
            while (asked := time.monotonic()) < stop:
                started = time.perf_counter()
                try:
                    status, headers = await client.ask(question)
                except (ConnectionError, asyncio.IncompleteReadError, OSError):
                    if window.opens <= asked:
                        outcome.failed += 1
                    client.writer = None
                    await asyncio.sleep(0.1)
                    continue
                now = time.monotonic()
                counted = window.opens <= now and (now < stop or window.tail)
                if status == 200:
                    outcome.answered += counted
                    if window.opens <= asked:
                        outcome.latencies.append(time.perf_counter() - started)
                elif status == 503:
                    wait = int(headers.get(b"retry-after", b"0") or 0)
                    if counted:
                        outcome.refused += 1
                        outcome.retry_after.append(wait)
                    elif now < window.opens:
                        outcome.refused_before += 1
                    await asyncio.sleep(max(0.0, min(max(wait, 1), stop - time.monotonic())))  # not past the run's end
                elif window.opens <= asked:
                    outcome.failed += 1
        finally:
            client.close()

    await asyncio.gather(*(one_client(n) for n in range(concurrency)))
    return outcome


async def slow_headers(port: int, clients: int, seconds: float) -> tuple[int, int]:
    """``clients`` connections that send a request's headers a byte a second, for ``seconds``:
    how many the server answered 408 (or closed), and how many were still open at the end."""
    closed = 0

    async def one() -> None:
        nonlocal closed
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /v1/ask HTTP/1.1\r\nhost: bench\r\nx-slow: ")
        stop = time.monotonic() + seconds
        try:
            while time.monotonic() < stop:
                try:
                    data = await asyncio.wait_for(reader.read(100), 1.0)
                except TimeoutError:
                    writer.write(b"a")
                    continue
                if not data or data.startswith(b"HTTP/1.1 408"):
                    closed += 1
                    return
        except (ConnectionError, OSError):
            closed += 1
        finally:
            writer.close()

    await asyncio.gather(*(one() for _ in range(clients)))
    return closed, clients - closed


async def open_streams(port: int, count: int, key: str, question: str, ready: asyncio.Event, release: asyncio.Event,
                       ramp_s: float = 10.0, deadline_s: float = 120.0) -> tuple[int, int, int]:
    """``count`` streamed questions, started evenly over ``ramp_s``, held open (their heads
    read) until ``release``; a refused one tries again after its ``Retry-After``, until
    ``deadline_s``. How many opened (200), how many refusals they met, how many never opened."""
    opened = refusals = 0
    writers = []
    stop = time.monotonic() + deadline_s
    body = json.dumps({"question": question}).encode()
    request = (b"POST /v1/ask/stream HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\nauthorization: Bearer "
               + key.encode() + b"\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def one(n: int) -> None:
        nonlocal opened, refusals
        await asyncio.sleep(ramp_s * n / count)
        while time.monotonic() < stop:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(request)
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
            except (ConnectionError, OSError, TimeoutError, asyncio.IncompleteReadError):
                await asyncio.sleep(1.0)
                continue
            if head.startswith(b"HTTP/1.1 200"):
                writers.append(writer)
                opened += 1
                return
            writer.close()
            refusals += 1
            retry = 1
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"retry-after:"):
                    retry = int(line.split(b":", 1)[1])
            await asyncio.sleep(retry)

    await asyncio.gather(*(one(n) for n in range(count)))
    ready.set()
    await release.wait()
    for writer in writers:
        writer.close()
    return opened, refusals, count - opened


def raise_open_files(wanted: int) -> str:
    """Raise this process's open-files limit (its children inherit it); says what it got."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return f"open files: {soft}" + ("" if soft >= wanted else f" (wanted {wanted}; the hard limit is {hard})")
