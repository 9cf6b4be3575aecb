"""The network guard: no test reaches a real model provider (issue 17, item 7).

A test that calls api.openai.com, api.anthropic.com, openrouter.ai or any other host that
is not this machine would spend someone's money, leak a developer's key into a provider's
logs, and pass or fail with the provider's mood. Every model in the tests is a
``ScriptedModel``/``FunctionModel`` or a real SDK pointed at ``tests/stub_llm_server.py`` on
127.0.0.1, so such a call is always a bug, and this guard turns it into a failed test.

How, and the decisions taken:

- ``install()`` (called from ``tests/conftest.py`` in ``pytest_configure``) replaces
  ``socket.getaddrinfo`` and ``socket.socket.connect``/``connect_ex``. That is the level every
  Python client goes through: ``socket.create_connection`` (httpx/httpcore sync, the
  ``openai`` and ``anthropic`` SDKs, PyMySQL), asyncio's resolver and ``sock_connect`` (httpx
  async over anyio, psycopg async). A name is refused at resolution, so the refusal is the
  same with or without DNS on the machine (without the resolver check, a sandbox without DNS
  would hide the attempt behind a ``gaierror`` and a developer's laptop would connect).
- Allowed: loopback (127.0.0.0/8, ::1, "localhost", "*.localhost"), the unspecified address
  (0.0.0.0/:: reach this machine), Unix sockets and other non-IP families, and the hosts of
  ``BATON_TEST_POSTGRES_URL``/``BATON_TEST_MYSQL_URL``/``BATON_TEST_REDIS_URL`` (the developer's own test servers,
  named on purpose; no model provider speaks their protocols). Everything else is refused.
- A refused attempt raises ``RealNetworkRefused`` (a ``ConnectionRefusedError``, so clients
  fail the way they fail on a dead host, immediately, without sending a byte) AND is recorded.
  The record is what fails the test: code under test often catches connection errors (a
  router retries, falls back, answers "the model is unavailable"), and a test asserting that
  degraded answer would otherwise pass while having tried to call a provider. The conftest's
  report hook fails the phase (setup, call or teardown) in which the attempt happened, naming
  the host and port; an attempt outside any test (at collection) fails the session.
- There is no marker to let a test through: no test needs the internet (the corpus the CI
  fetches is fetched by ``.ci/run`` before pytest, and PyPI is used only by installers).
  ``expect_refusal()`` exists only so the guard's own test can show a refusal in process.
- Not covered: processes a test starts (``baton demo``, pipeline workers) and code that
  connects outside Python's socket module (libpq under psycopg's sync connections, uvloop,
  Chromium). Those children inherit the environment, from which the conftest removes every
  model credential and model setting, so they cannot be configured to call a provider unless
  the test does so explicitly.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

DATABASE_URL_VARIABLES = ("BATON_TEST_POSTGRES_URL", "BATON_TEST_MYSQL_URL", "BATON_TEST_REDIS_URL")


class RealNetworkRefused(ConnectionRefusedError):
    """A test tried to open a connection to a host that is not this machine."""


@dataclass(frozen=True)
class Attempt:
    host: str
    port: Any
    how: str  # "resolve" or "connect"

    def describe(self) -> str:
        return f"{self.how} {self.host}:{self.port}"


_attempts: list[Attempt] = []
_originals: dict[str, Any] = {}
_allowed_names: set[str] = set()


def _is_local_address(text: str) -> bool | None:
    """True/False for an IP literal (loopback or unspecified is local), None for a name."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    address = mapped or address
    return address.is_loopback or address.is_unspecified


def is_allowed(host: Any) -> bool:
    """Whether a test may reach ``host`` (module docstring)."""
    if host is None:
        return True  # getaddrinfo(None, port): a local address to bind to
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).strip("[]").rstrip(".").lower()
    if host in ("", "localhost") or host.endswith(".localhost") or host in _allowed_names:
        return True
    local = _is_local_address(host)
    return bool(local)


def _refuse(host: Any, port: Any, how: str) -> RealNetworkRefused:
    attempt = Attempt(host.decode("ascii", "replace") if isinstance(host, bytes) else str(host), port, how)
    _attempts.append(attempt)
    return RealNetworkRefused(
        f"network guard: a test tried to {attempt.describe()}; tests may reach only this machine "
        "(use tests/stub_llm_server.py for a provider, ScriptedModel/FunctionModel for a model)")


def _guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    if not is_allowed(host):
        raise _refuse(host, port, "resolve")
    found = _originals["getaddrinfo"](host, port, *args, **kwargs)
    if str(host).lower() in _allowed_names:  # a test database named by host name: its addresses too
        _allowed_names.update(str(entry[4][0]).lower() for entry in found)
    return found


def _check_address(sock: socket.socket, address: Any) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple) and address:
        if not is_allowed(address[0]):
            raise _refuse(address[0], address[1] if len(address) > 1 else "?", "connect")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check_address(self, address)
    return _originals["connect"](self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check_address(self, address)
    return _originals["connect_ex"](self, address)


def install() -> None:
    """Refuse non-local connections from now on (idempotent)."""
    if _originals:
        return
    for variable in DATABASE_URL_VARIABLES:
        url = os.environ.get(variable)
        name = urlsplit(url).hostname if url else None
        if name:
            _allowed_names.add(name.lower())
    _originals.update(getaddrinfo=socket.getaddrinfo, connect=socket.socket.connect,
                      connect_ex=socket.socket.connect_ex)
    socket.getaddrinfo = _guarded_getaddrinfo
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


def uninstall() -> None:
    if not _originals:
        return
    socket.getaddrinfo = _originals.pop("getaddrinfo")
    socket.socket.connect = _originals.pop("connect")  # type: ignore[method-assign]
    socket.socket.connect_ex = _originals.pop("connect_ex")  # type: ignore[method-assign]
    _allowed_names.clear()


def take_attempts() -> list[Attempt]:
    """The attempts refused since the last call (the conftest fails the phase that made them)."""
    taken = list(_attempts)
    del _attempts[: len(taken)]
    return taken


def failure_text(attempts: list[Attempt]) -> str:
    tried = ", ".join(sorted({a.describe() for a in attempts}))
    return (f"network guard: this test tried to reach a host that is not this machine ({tried}). "
            "Tests must never call a real model provider: use tests/stub_llm_server.py on 127.0.0.1 "
            "or baton.llm's ScriptedModel/FunctionModel (see tests/network_guard.py).")


@contextlib.contextmanager
def expect_refusal() -> Iterator[list[Attempt]]:
    """For the guard's own test: the attempts refused inside the block are handed over (and
    so do not fail the test)."""
    before = len(_attempts)
    seen: list[Attempt] = []
    try:
        yield seen
    finally:
        seen.extend(_attempts[before:])
        del _attempts[before:]
