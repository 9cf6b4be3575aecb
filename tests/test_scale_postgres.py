"""Baton at scale, for real: 3 ``baton serve`` replicas and 2 ``baton worker``s as
subprocesses on one PostgreSQL state, with a stub model server.

- one conversation alternates replicas for 6 turns, follow-ups included ("Show only the top
  5" on another replica returns 5 rows);
- a pipeline started on replica 1 streams its events on replica 3 (the run executes on a
  worker: the events cross processes through LISTEN/NOTIFY) and is approved through
  replica 2;
- the worker running a stage is SIGKILLed in the middle of it; the other worker takes the
  run over and finishes it, and no completed stage runs again;
- memory written through one replica is read through another.
"""

import json
import threading

import httpx
import pytest

from pg_fresh import fresh_database
from scale_rig import StubModel, build_shop, process_env, serve, worker

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

TURNS = [("Total sales by region?", 8), ("Show only the top 5", 5), ("Show this as a pie chart", 5),
         ("How many sales per month?", 6), ("Show only the top 3", 3), ("Show this as a bar chart", 3)]
PLAN = {"question": "review then details", "stages": [
    {"stage_id": "regions", "tool": "query_database", "question": "Regional totals for the review", "depends_on": [], "checkpoint": True},
    {"stage_id": "slow", "tool": "query_database", "question": "Monthly sales, computed slowly", "depends_on": ["regions"]},
    {"stage_id": "products", "tool": "query_database", "question": "Product totals to finish", "depends_on": ["slow"]},
]}


@pytest.fixture
def cluster(postgres_url, tmp_path):
    stub = StubModel().start()
    shop = build_shop(tmp_path / "shop.sqlite")
    processes = []
    with fresh_database(postgres_url) as state_url:
        try:
            def env(name):
                return process_env(tmp_path / f"home-{name}", state_url, stub.model_string)

            replicas = [serve(f"replica-{i}", env(f"r{i}"), "--database", shop) for i in (1, 2, 3)]
            processes += replicas
            workers = [worker(f"worker-{x}", env(f"w{x}"), "--database", shop, "--heartbeat", "0.5", "--lapse", "2",
                              "--poll", "0.1") for x in ("a", "b")]
            processes += workers
            for p in processes:
                p.wait_ready()
            yield stub, replicas, {w.name: w for w in workers}
        finally:
            for p in processes:
                p.stop()
            stub.stop()


class EventReader(threading.Thread):
    """Reads a run's SSE stream from one replica, noting every event name as it arrives."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url, self.headers = url, headers
        self.names: list[str] = []
        self.data: list[dict] = []
        self.checkpoint = threading.Event()
        self.ended = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.stream("GET", self.url, headers=self.headers, timeout=httpx.Timeout(10, read=180)) as response:
                name = None
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: ") and name:
                        self.names.append(name)
                        self.data.append(json.loads(line[6:]))
                        if name == "stage.checkpoint":
                            self.checkpoint.set()
                        if name == "end":
                            break
        except BaseException as exc:
            self.error = exc
        finally:
            self.checkpoint.set()
            self.ended.set()


def test_three_replicas_and_two_workers_on_one_postgres(cluster):
    stub, (r1, r2, r3), workers = cluster
    key = r1.key()
    assert r2.key() == key == r3.key()  # the key kept in the state
    headers = {"Authorization": f"Bearer {key}"}
    replicas = [r1, r2, r3]

    # one conversation, every turn on the next replica
    session_id, first_turn = None, None
    for turn, (question, rows) in enumerate(TURNS):
        replica = replicas[turn % 3]
        response = httpx.post(f"{replica.url}/v1/ask", json={"question": question, "session_id": session_id}, headers=headers, timeout=120)
        assert response.status_code == 200, (replica.name, response.text)
        answer = response.json()
        assert answer["error"] is None and len(answer["data"]) == rows, (replica.name, question, answer["content"])
        session_id = answer["session_id"]
        first_turn = first_turn or answer
    for replica in replicas:
        turns = httpx.get(f"{replica.url}/v1/sessions/{session_id}", headers=headers, timeout=30).json()["turns"]
        assert [t["question"] for t in turns] == [q for q, _ in TURNS]

    # memory written through replica 1 is read through replica 2
    confirmed = httpx.post(f"{r1.url}/v1/feedback", json={"turn_id": first_turn["turn_id"], "verdict": "confirmed"}, headers=headers, timeout=30)
    record_id = confirmed.json()["memory"]["record_id"]
    shown = httpx.get(f"{r2.url}/v1/memory/{record_id}", headers=headers, timeout=30)
    assert shown.status_code == 200 and shown.json()["record"]["kind"] == "benchmark"

    # a pipeline started on replica 1, followed on replica 3, approved through replica 2
    started = httpx.post(f"{r1.url}/v1/pipelines", json={"plan": PLAN}, headers=headers, timeout=30)
    assert started.status_code == 202, started.text
    wid = started.json()["workflow_id"]
    reader = EventReader(f"{r3.url}/v1/pipelines/{wid}/events", headers)
    reader.start()
    assert reader.checkpoint.wait(120) and reader.error is None, reader.error
    assert "stage.checkpoint" in reader.names and "sql.attempt" in reader.names  # the agents inside the worker's stage, live
    approved = httpx.post(f"{r2.url}/v1/pipelines/{wid}/decision", json={"action": "approve", "stage_id": "regions", "wait": False},
                          headers=headers, timeout=30)
    assert approved.status_code == 202, approved.text

    # kill the worker running the slow stage while the stage runs
    assert stub.slow_started.wait(120)
    running = httpx.get(f"{r1.url}/v1/pipelines/{wid}", headers=headers, timeout=30).json()
    victim = workers[running["executor_id"]]
    victim.kill()
    stub.release.set()
    survivor = next(w for name, w in workers.items() if name != victim.name)
    assert reader.ended.wait(180) and reader.error is None, reader.error
    final = httpx.get(f"{r2.url}/v1/pipelines/{wid}", headers=headers, timeout=30).json()
    assert final["status"] == "complete" and final["executor_id"] == survivor.name, final
    assert [s["status"] for s in final["outcome"]["metadata"]["stages"]] == ["success", "success", "success"]
    assert "pipeline.complete" in reader.names and reader.names[-1] == "end"
    # the completed stage ran once; the killed one again (at-least-once); the last one once
    asked = stub.sql_questions
    assert (asked["Regional totals for the review"], asked["Monthly sales, computed slowly"], asked["Product totals to finish"]) == (1, 2, 1)
    runs = httpx.get(f"{r3.url}/v1/pipelines", headers=headers, timeout=30).json()["runs"]
    assert [r["workflow_id"] for r in runs] == [wid]
    for p in (r1, r2, r3, survivor):
        assert "Traceback" not in p.output, p.output[-3000:]
