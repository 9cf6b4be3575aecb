"""``baton serve --workers 2``: two processes on one port, each with the same app over the
same state: both serve, any of them continues a conversation the other began, and the key
printed at start is the one every worker accepts."""

from __future__ import annotations

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


def test_two_workers_on_one_port_share_the_state(tmp_path):
    port = free_port()
    env = {"BATON_HOME": str(tmp_path / "home"), "BATON_MODEL": "", "BATON_API_KEYS": "", "BATON_STATE_URL": ""}
    server = BatonProcess("serve", ["serve", "--port", str(port), "--workers", "2", "--log-level", "warning"], env, port=port)
    try:
        server.wait_ready(180)
        key = server.key()
        assert len(_workers(server.process.pid)) == 2
        headers = {"Authorization": f"Bearer {key}"}
        first = httpx.post(f"{server.url}/v1/ask", json={"question": SMOKE_QUESTION}, headers=headers, timeout=60).json()
        assert first["data"] and first["error"] is None
        session = first["session_id"]
        for _ in range(6):  # new connections: the kernel spreads them over both workers
            with httpx.Client(timeout=60) as client:
                turn = client.post(f"{server.url}/v1/ask", json={"question": SMOKE_QUESTION, "session_id": session}, headers=headers)
            assert turn.status_code == 200 and turn.json()["session_id"] == session
        turns = httpx.get(f"{server.url}/v1/sessions/{session}", headers=headers, timeout=30).json()["turns"]
        assert len(turns) == 7
    finally:
        server.stop()
