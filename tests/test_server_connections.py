"""Connections against a real uvicorn server running ``BatonHttpProtocol``
(``baton.server.connections``): a client that never finishes its headers is answered 408 and
closed after the header timeout, while a normal client beside 50 of them is answered; past
the connection limit a connection is answered 503 with ``Retry-After`` and closed; the
limit sits above admission's hard cap; ``baton serve`` uses the protocol."""

from __future__ import annotations

import contextlib
import socket
import time

import httpx
import uvicorn
from fastapi import FastAPI

from baton.server.connections import BatonHttpProtocol, Pipeline, connection_limit
from baton.server.limits import Limits
from live_server import free_port, running


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/hello")
    async def hello() -> dict[str, str]:
        return {"hello": "world"}

    return app


@contextlib.contextmanager
def serving(limits: Limits):
    config = uvicorn.Config(_app(), host="127.0.0.1", port=free_port(), log_level="warning", lifespan="off",
                            http=BatonHttpProtocol)
    config.baton_limits = limits  # type: ignore[attr-defined]
    with running(config) as port:
        yield port


def _read_all(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (the socket's timeout bounds the wait)."""
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data


def test_a_client_that_never_finishes_its_headers_gets_408_and_is_closed():
    with serving(Limits(header_timeout_s=0.3)) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as trickle, \
                socket.create_connection(("127.0.0.1", port), timeout=20) as silent:
            trickle.sendall(b"GET /hello HTTP/1.1\r\nhost: x\r\nx-slow: a")  # and never the rest
            trickled = _read_all(trickle)
            silence = _read_all(silent)  # connected, never sent a byte
    assert trickled.startswith(b"HTTP/1.1 408 ") and b"connection: close" in trickled
    assert silence.startswith(b"HTTP/1.1 408 ")


def test_a_keep_alive_connection_serves_requests_and_times_only_the_headers():
    """A request whose headers came in time is answered, on a connection kept alive; the
    next request on it is timed from its own first byte."""
    with serving(Limits(header_timeout_s=0.5)) as port, socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(b"GET /hello HTTP/1.1\r\nhost: x\r\n\r\n")
        first = b""
        while not first.endswith(b"}"):  # the head and the body may come in two reads
            first += sock.recv(4096)
        sock.sendall(b"GET /hello HTTP/1.1\r\nhost: x\r\n")  # the second's headers, unfinished
        second = _read_all(sock)
    assert first.startswith(b"HTTP/1.1 200 ") and first.endswith(b'{"hello":"world"}')
    assert second.startswith(b"HTTP/1.1 408 ")


def test_fifty_slow_header_clients_do_not_stop_a_normal_client():
    with serving(Limits(header_timeout_s=30)) as port:
        slow = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(50)]
        try:
            for sock in slow:
                sock.sendall(b"POST /hello HTTP/1.1\r\nhost: x\r\nx-a: ")
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as client:
                answers = [client.get("/hello") for _ in range(20)]
            for sock in slow:  # another byte each: still trickling
                sock.sendall(b"b")
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as client:
                answers += [client.get("/hello") for _ in range(20)]
        finally:
            for sock in slow:
                sock.close()
    assert [a.status_code for a in answers] == [200] * 40


def test_past_the_connection_limit_a_connection_gets_503_with_retry_after_and_is_closed():
    with serving(Limits(max_connections=3, header_timeout_s=30)) as port:
        kept = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(3)]
        try:
            time.sleep(0.2)  # the server has accepted them (the order of accepts, not a timed assertion)
            with socket.create_connection(("127.0.0.1", port), timeout=20) as extra:
                extra.sendall(b"GET /v1/ask HTTP/1.1\r\nhost: x\r\n\r\n")
                refused = _read_all(extra)
            kept[0].sendall(b"GET /hello HTTP/1.1\r\nhost: x\r\n\r\n")
            served = kept[0].recv(4096)
        finally:
            for sock in kept:
                sock.close()
    head, _, body = refused.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in head and b"connection: close" in head
    assert b'"error_code": "overloaded"' in body
    assert served.startswith(b"HTTP/1.1 200 ")


def test_the_connection_limit_sits_above_admissions_cap():
    """Admission, not the socket layer, decides who is served: its cap is under the limit
    (by default, and within the open-files limit the server raises at start)."""
    from baton.cli.serving import connection_options

    options = connection_options()  # raises the open-files limit as `baton serve` does
    assert options["http"] == "baton.server.connections:BatonHttpProtocol" and options["limit_concurrency"] is None
    limits = Limits(max_in_flight=1000)
    assert connection_limit(limits) == 1250 > limits.max_in_flight
    assert connection_limit(Limits(max_in_flight=1000, max_connections=2000)) == 2000


def test_the_pipeline_list_hands_out_requests_in_the_order_uvicorns_deque_does():
    pipeline = Pipeline()
    assert not pipeline
    pipeline.appendleft("first")
    pipeline.appendleft("second")
    assert pipeline and pipeline.pop() == "first" and pipeline.pop() == "second" and not pipeline
