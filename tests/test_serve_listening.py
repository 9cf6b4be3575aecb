"""``baton serve`` binds its port before it prints the login link: when the link appears, the
port already accepts connections (they wait in the backlog until the app has started), so the
link never opens whatever else listened there; a taken port is refused before any link
(``baton.cli.listening``; the refusal's wording is in test_cli_mistakes.py)."""

from __future__ import annotations

import os
import socket
import subprocess

import httpx
import pytest

from baton_processes import BATON, BatonProcess
from live_server import free_port


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_port_accepts_connections_when_the_link_is_printed(tmp_path, workers):
    port = free_port()
    env = {"BATON_HOME": str(tmp_path), "BATON_MODEL": "", "BATON_API_KEYS": "", "BATON_STATE_URL": ""}
    server = BatonProcess("serve", ["serve", "--port", str(port), "--workers", workers, "--log-level", "warning"], env, port=port)
    try:
        key = server.key(timeout=180)
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # at once: no retry, no wait
            pass
        page = httpx.get(f"{server.url}/", timeout=120)  # answered once the app has started
        assert page.status_code == 200
        assert f"127.0.0.1:{port}/#key={key}" in server.output
    finally:
        server.stop()


def test_a_taken_port_prints_no_link(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {**os.environ, "BATON_HOME": str(tmp_path), "BATON_MODEL": "", "BATON_API_KEYS": "", "BATON_STATE_URL": ""}
        done = subprocess.run([str(BATON), "serve", "--port", str(port)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == "" and "#key=" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and f"port {port} on 127.0.0.1 is already in use" in done.stderr
