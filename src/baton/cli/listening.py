"""The listening socket of ``baton serve`` / ``baton demo``, bound before any link is printed.

uvicorn binds when it starts serving, after the app is built and the login link printed: on a
port that is taken, the printed link opened whatever already listened there (another Baton,
with another key) and the command then died with uvicorn's raw error. Here the port is bound
and listening first (connections wait in the backlog while the app is built), a taken or
unusable address is a ``StartupRefusal`` naming a free port to pass as ``--port``, and the
bound socket is handed to uvicorn (to its supervisor with ``--workers N``, whose processes
inherit it).
"""

from __future__ import annotations

import errno
import socket

from baton.errors import StartupRefusal

BACKLOG = 2048  # connections the kernel queues before accept: admission control answers them, not a reset
NEARBY_PORTS = 20  # the ports after a taken one tried for a suggestion, before asking the kernel for any


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(_family(host), socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a restart reuses a port in TIME_WAIT
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def free_port(host: str, after: int) -> int | None:
    """A port ``host`` can bind now: one of the few after ``after``, else any the kernel
    gives (None when even that fails). Only a suggestion: it is not held."""
    candidates = [p for p in range(after + 1, after + 1 + NEARBY_PORTS) if p <= 65535] + [0]
    for port in candidates:
        try:
            sock = _bind(host, port)
        except OSError:
            continue
        with sock:
            return int(sock.getsockname()[1])
    return None


def bind_listener(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, inheritable by uvicorn's worker
    processes; a ``StartupRefusal`` (one line, exit 2 at the CLI) when it cannot be."""
    try:
        sock = _bind(host, port)
    except socket.gaierror as exc:
        raise StartupRefusal(f"--host {host}: not an address of this machine ({exc.strerror})",
                             "pass --host 127.0.0.1, 0.0.0.0 or one of this machine's addresses") from None
    except OverflowError:
        raise StartupRefusal(f"--port {port}: not a port", "pass a port between 1 and 65535") from None
    except OSError as exc:
        raise _refusal(host, port, exc) from None
    try:
        sock.listen(BACKLOG)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def _refusal(host: str, port: int, exc: OSError) -> StartupRefusal:
    if exc.errno == errno.EADDRINUSE:
        suggestion = free_port(host, port)
        fix = f"stop what listens there, or pass --port {suggestion} (free now)" if suggestion else "stop what listens there"
        return StartupRefusal(f"port {port} on {host} is already in use", fix)
    if exc.errno == errno.EACCES:
        suggestion = free_port(host, max(port, 1023))
        return StartupRefusal(f"port {port} on {host} needs privileges this process lacks",
                              f"pass --port {suggestion}" if suggestion else "pass a port above 1023")
    if exc.errno == errno.EADDRNOTAVAIL:
        return StartupRefusal(f"--host {host}: not an address of this machine",
                              "pass --host 127.0.0.1, 0.0.0.0 or one of this machine's addresses")
    return StartupRefusal(f"cannot listen on {host}:{port} ({exc.strerror or exc})", "pass another --host or --port")
