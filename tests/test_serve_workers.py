"""``baton serve --workers 2``: two processes on one port, each with the same app over the
same state: both serve, each continues a conversation the other began, and the key printed
at start is the one every worker accepts.

Which worker answers is made certain, not left to the kernel: while one worker is stopped
(``SIGSTOP``) the other is the only one that can accept the connection. A worker is stopped
for one question only, well within uvicorn's 5 s health check of its workers."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import httpx

from baton.cli.serving import SMOKE_QUESTION
from baton_processes import BatonProcess
from live_server import free_port


def _workers(supervisor: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == supervisor and b"spawn_main" in cmdline:
            found.append(int(proc.name))
    return found


@contextlib.contextmanager
def only(worker: int, workers: list[int]):
    """Every worker but ``worker`` stopped meanwhile."""
    stopped = [pid for pid in workers if pid != worker]
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def ask(url: str, headers: dict[str, str], session: str | None = None) -> dict:
    with httpx.Client(timeout=60) as client:  # a new connection: accepted by a worker that runs
        response = client.post(f"{url}/v1/ask", json={"question": SMOKE_QUESTION, "session_id": session}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_two_workers_on_one_port_share_the_state(tmp_path):
    port = free_port()
    env = {"BATON_HOME": str(tmp_path / "home"), "BATON_MODEL": "", "BATON_API_KEYS": "", "BATON_STATE_URL": ""}
    server = BatonProcess("serve", ["serve", "--port", str(port), "--workers", "2", "--log-level", "warning"], env, port=port)
    try:
        server.wait_ready(180)
        key = server.key()
        workers = sorted(_workers(server.process.pid))
        assert len(workers) == 2
        headers = {"Authorization": f"Bearer {key}"}
        for worker in workers:  # each warmed up alone, so that a worker stopped later is stopped briefly
            with only(worker, workers):
                assert ask(server.url, headers)["error"] is None
        with only(workers[0], workers):
            first = ask(server.url, headers)  # begun by the first worker
        assert first["data"] and first["error"] is None
        session = first["session_id"]
        with only(workers[1], workers):
            second = ask(server.url, headers, session)  # continued by the second
        with only(workers[0], workers):
            third = ask(server.url, headers, session)  # and back
        assert second["session_id"] == third["session_id"] == session
        turns = httpx.get(f"{server.url}/v1/sessions/{session}", headers=headers, timeout=30).json()["turns"]
        assert [t["seq"] for t in turns] == [1, 2, 3]
        assert sorted(_workers(server.process.pid)) == workers  # no worker was judged dead and replaced meanwhile
    finally:
        server.stop()
