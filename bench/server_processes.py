"""The processes of ``server_throughput.py``: ports, the server under test, its CPU and
resident memory, what its admission control measured."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live children (from /proc)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
        for child in children:  # uvicorn's workers may have children of their own (renderers: not here)
            pids += [int(c) for c in Path(f"/proc/{child}/task/{child}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent busy (every core; /proc/stat: all but idle and iowait)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def wait_listening(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("stub did not start")


def wait_ready(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
                if sock.recv(100).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not start")


def start_server(port: int, workers: int, env: dict[str, str], factory: str = "server_throughput:app_factory") -> subprocess.Popen:
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); from baton.cli.serving import serve_factory; "
            f"serve_factory({factory!r}, '127.0.0.1', {port}, workers={workers}, "
            f"log_level={env.get('BENCH_LOG_LEVEL', 'warning')!r})")  # info: admission's saturation, as it comes and goes
    return subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)


def make_home() -> Path:
    home = Path(tempfile.mkdtemp(prefix="baton-bench-"))
    with sqlite3.connect(home / "sales.sqlite") as conn:
        conn.execute("CREATE TABLE sales (month TEXT, revenue INTEGER)")
        conn.executemany("INSERT INTO sales VALUES (?, ?)", [(f"2025-{m:02d}", 1000 + 37 * m) for m in range(1, 13)])
    return home


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def worker_rss(server_pid: int) -> int:
    """Resident bytes of the server's worker: the largest of uvicorn's supervisor's children,
    or the server itself when it has none (one worker serves in the process it was started in)."""
    largest = 0
    try:
        children = Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split() or [str(server_pid)]
    except OSError:
        return 0
    for child in children:
        try:
            for line in Path(f"/proc/{child}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    largest = max(largest, int(line.split()[1]) * 1024)
        except (OSError, ValueError):
            continue
    return largest


def admission(port: int) -> str:
    """What the server's admission measured (``/health/ready``): its limit, memory per unit, refusals by reason."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /health/ready HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        state = json.loads(data.partition(b"\r\n\r\n")[2])["dependencies"]["admission"]
    except (OSError, ValueError, KeyError):
        return "admission: (not read)"
    return (f"admission: limit {state['limit']} (cap {state['memory_cap']}), {state['bytes_per_unit'] / 1024:.0f} KiB per unit in "
            f"flight, refusals {state['refusals']}, the last: {state['last_refusal'][:90]!r}")


def stop(process: subprocess.Popen, timeout: float) -> None:
    """SIGTERM to the process's group; SIGKILL when it has not ended within ``timeout`` (a
    server with thousands of connections just closed may take longer: said, not hidden)."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        print(f"(pid {process.pid} did not end within {timeout:g} s of SIGTERM: killed)", flush=True)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
