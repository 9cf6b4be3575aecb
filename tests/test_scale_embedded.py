"""The embedded default as two processes: two ``baton serve`` started at the same instant on
an empty ``BATON_HOME`` (no crash), one conversation alternating between them with
follow-ups, and the same key printed by both (kept in the state)."""

import threading

import httpx
import pytest

from baton_processes import BatonProcess
from live_server import free_port

TURNS = [
    ("What was the profit of each roadshow city?", 12),
    ("Show only the top 5", 5),
    ("Show this as a pie chart", 5),
    ("What was Pokemon revenue by month in 2025?", 12),
    ("Show only the top 3", 3),
    ("Show this as a bar chart", 3),
]


@pytest.fixture
def two_servers(tmp_path):
    env = {"BATON_HOME": str(tmp_path / "home"), "BATON_MODEL": "", "BATON_API_KEYS": "", "BATON_STATE_URL": "",
           "BATON_DEMO_KEY": ""}
    go = threading.Barrier(2)
    servers: list[BatonProcess] = []

    def start(name):
        port = free_port()
        go.wait()  # both at the same instant, on the same empty folder
        servers.append(BatonProcess(name, ["serve", "--port", str(port), "--log-level", "warning"], env, port=port))

    threads = [threading.Thread(target=start, args=(f"serve-{i}",)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        yield [s.wait_ready() for s in sorted(servers, key=lambda s: s.name)]
    finally:
        for server in servers:
            server.stop()


def test_two_processes_on_one_empty_home_share_one_conversation(two_servers):
    first, second = two_servers
    key = first.key()
    assert second.key() == key  # the key kept in the state, made once
    headers = {"Authorization": f"Bearer {key}"}
    session_id = None
    for turn, (question, rows) in enumerate(TURNS):
        server = two_servers[turn % 2]
        response = httpx.post(f"{server.url}/v1/ask", json={"question": question, "session_id": session_id},
                              headers=headers, timeout=60)
        assert response.status_code == 200, (server.name, response.text)
        answer = response.json()
        assert answer["error"] is None and len(answer["data"]) == rows, (question, answer["content"])
        session_id = answer["session_id"]
    for server in two_servers:
        turns = httpx.get(f"{server.url}/v1/sessions/{session_id}", headers=headers, timeout=30).json()["turns"]
        assert [t["question"] for t in turns] == [q for q, _ in TURNS]
    assert "Traceback" not in first.output + second.output
