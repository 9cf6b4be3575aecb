"""A rig for the order of pipeline events across processes: ``baton serve`` replicas and
``baton worker``s on one PostgreSQL state (``scale_rig``), runs started on one replica, and
readers of their SSE streams attaching at random times on any replica, some reconnecting
mid-run with ``Last-Event-ID``. Every reader's numbered events must equal the run's whole
sequence read after it ended. Used by ``tests/test_pipeline_event_order.py`` and
``bench/event_order.py``.

A stage whose question contains ``hold:<tag>`` is held at the stub model until
``let_go(tag)``: a run can be caught with a stage in flight, to SIGKILL its worker.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from baton_processes import BatonProcess
from pg_fresh import fresh_database
from scale_rig import StubModel, build_shop, process_env, serve, worker

HOLD = re.compile(r"hold:(\w+)")


class HoldingStub(StubModel):
    """The scale rig's stub; a question with ``hold:<tag>`` waits for ``let_go(tag)``."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: dict[str, threading.Event] = {}
        self.released: dict[str, threading.Event] = {}
        self._tags = threading.Lock()

    def _events(self, tag: str) -> tuple[threading.Event, threading.Event]:
        with self._tags:
            return self.arrived.setdefault(tag, threading.Event()), self.released.setdefault(tag, threading.Event())

    def respond(self, kind: str, body: Any):
        messages = (body or {}).get("messages") or []
        tools = {t["function"]["name"] for t in (body or {}).get("tools") or ()}
        question = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        found = HOLD.search(question)
        if found and "run_sql" in tools and messages and messages[-1].get("role") != "tool":
            arrived, released = self._events(found.group(1))
            arrived.set()
            released.wait(120)
        return super().respond(kind, body)

    def let_go(self, tag: str) -> None:
        self._events(tag)[1].set()


def plan(tag: str | None = None) -> dict[str, Any]:
    hold = f" hold:{tag}" if tag else ""
    return {"question": "three stages", "stages": [
        {"stage_id": "regions", "tool": "query_database", "question": "Regional totals", "depends_on": []},
        {"stage_id": "months", "tool": "query_database", "question": f"Monthly sales{hold}", "depends_on": ["regions"]},
        {"stage_id": "products", "tool": "query_database", "question": "Product totals", "depends_on": ["months"]},
    ]}


@dataclass
class Cluster:
    stub: HoldingStub
    replicas: list[BatonProcess]
    workers: dict[str, BatonProcess]
    headers: dict[str, str]
    spawn_worker: Any
    retired: list[BatonProcess] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # runs, readers, resumed readers, events read


@contextlib.contextmanager
def cluster(postgres_url: str, home: Path, *, replicas: int = 2, workers: int = 2) -> Iterator[Cluster]:
    stub = HoldingStub().start()
    shop = build_shop(home / "shop.sqlite")
    processes: list[BatonProcess] = []
    with fresh_database(postgres_url) as state_url:
        try:
            def env(name: str) -> dict[str, str]:
                return process_env(home / f"home-{name}", state_url, stub.model_string)

            made = iter(range(1, 1000))

            def spawn_worker() -> BatonProcess:
                name = f"worker-{next(made)}"
                started = worker(name, env(name), "--database", shop, "--heartbeat", "0.3", "--lapse", "1.5", "--poll", "0.1")
                processes.append(started)
                return started

            servers = [serve(f"replica-{i}", env(f"r{i}"), "--database", shop) for i in range(1, replicas + 1)]
            processes += servers
            running = [spawn_worker() for _ in range(workers)]
            for p in processes:
                p.wait_ready()
            key = servers[0].key()
            yield Cluster(stub, servers, {w.name: w for w in running}, {"Authorization": f"Bearer {key}"}, spawn_worker)
        finally:
            for p in processes:
                p.stop()
            stub.stop()


class Reader(threading.Thread):
    """Reads a run's SSE stream from ``url`` after ``delay`` s; with ``hop_after`` it drops the
    connection after that many numbered events and resumes on ``resume_url`` with
    ``Last-Event-ID``. ``numbered``: (seq, type, attempt) of every event with an ``id``."""

    def __init__(self, url: str, headers: dict[str, str], *, delay: float = 0.0, hop_after: int | None = None,
                 resume_url: str | None = None) -> None:
        super().__init__(daemon=True)
        self.url, self.headers, self.delay = url, headers, delay
        self.hop_after, self.resume_url = hop_after, resume_url
        self.numbered: list[tuple[int, str, int]] = []
        self.ended = False
        self.error: BaseException | None = None
        self.hops = 0

    def run(self) -> None:
        try:
            time.sleep(self.delay)
            if self._read(self.url, {}, self.hop_after) and self.resume_url:
                self.hops += 1
                self._read(self.resume_url, {"Last-Event-ID": str(self.numbered[-1][0])}, None)
        except BaseException as exc:
            self.error = exc

    def _read(self, url: str, extra: dict[str, str], stop_after: int | None) -> bool:
        """True when it stopped early on purpose."""
        with httpx.stream("GET", url, headers={**self.headers, **extra}, timeout=httpx.Timeout(10, read=120)) as response:
            response.raise_for_status()
            name, ident = None, None
            for line in response.iter_lines():
                if line.startswith("id: "):
                    ident = int(line[4:])
                elif line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name:
                    if name == "end":
                        self.ended = True
                        return False
                    if name == "error":
                        raise RuntimeError(f"stream error: {line[6:]}")
                    if ident is not None:
                        data = json.loads(line[6:])["data"]
                        assert data["seq"] == ident, (ident, data)
                        self.numbered.append((ident, name, data["attempt"]))
                        if stop_after is not None and len(self.numbered) >= stop_after:
                            return True
                    name, ident = None, None
        return False


def check_run(wid: str, reference: Reader, readers: list[Reader]) -> list[str]:
    """What is wrong with the run's streams (nothing: an empty list)."""
    problems = []
    ref = reference.numbered
    if reference.error or not reference.ended:
        return [f"{wid}: the reference reader failed: {reference.error!r}"]
    if [s for s, _, _ in ref] != list(range(1, len(ref) + 1)):
        problems.append(f"{wid}: the sequence has gaps or repeats: {[s for s, _, _ in ref]}")
    attempts = [a for _, _, a in ref]
    if attempts != sorted(attempts):
        problems.append(f"{wid}: attempts out of order: {attempts}")
    if not ref or ref[-1][1] != "pipeline.status":
        problems.append(f"{wid}: the sequence does not end with the run's status: {ref[-3:]}")
    for reader in readers:
        if reader.error or not reader.ended:
            problems.append(f"{wid}: a reader (delay {reader.delay:.2f}, hop {reader.hop_after}) failed: {reader.error!r}")
        elif reader.numbered != ref:
            problems.append(f"{wid}: a reader (delay {reader.delay:.2f}, hop {reader.hop_after}) got "
                            f"{[s for s, _, _ in reader.numbered]}, the run has {[s for s, _, _ in ref]}")
    return problems


def readers_for(c: Cluster, wid: str, rng: random.Random, *, spread_s: float) -> list[Reader]:
    """Readers of one run: one at once on another replica, one at a random moment, one that
    reconnects mid-run on another replica."""
    urls = [f"{r.url}/v1/pipelines/{wid}/events" for r in c.replicas]
    readers = [
        Reader(urls[1 % len(urls)], c.headers),
        Reader(rng.choice(urls), c.headers, delay=rng.uniform(0, spread_s)),
        Reader(rng.choice(urls), c.headers, delay=rng.uniform(0, spread_s / 2), hop_after=rng.randint(1, 6),
               resume_url=rng.choice(urls)),
    ]
    for reader in readers:
        reader.start()
    return readers


def start_run(c: Cluster, tag: str | None = None, replica: int = 0) -> str:
    response = httpx.post(f"{c.replicas[replica].url}/v1/pipelines", json={"plan": plan(tag)}, headers=c.headers, timeout=60)
    assert response.status_code == 202, response.text
    return str(response.json()["workflow_id"])


def finish(c: Cluster, wid: str, readers: list[Reader], rng: random.Random) -> list[str]:
    """Wait for the run's readers, read it whole once more (the reference), and check."""
    for reader in readers:
        reader.join(150)
    reference = Reader(f"{rng.choice(c.replicas).url}/v1/pipelines/{wid}/events", c.headers)
    reference.run()
    c.counts.update(runs=1, readers=len(readers) + 1, resumed=sum(r.hops for r in readers),
                    events=sum(len(r.numbered) for r in [*readers, reference]),
                    late=sum(1 for r in readers if r.numbered and r.numbered[0][0] == 1 and r.delay > 0))
    return check_run(wid, reference, readers)


def plain_runs(c: Cluster, count: int, rng: random.Random, *, at_once: int = 8, spread_s: float = 2.0) -> list[str]:
    """``count`` runs, ``at_once`` together, each with its readers; the problems found."""
    problems: list[str] = []
    for first in range(0, count, at_once):
        batch = []
        for i in range(first, min(count, first + at_once)):
            wid = start_run(c, replica=i % len(c.replicas))
            batch.append((wid, readers_for(c, wid, rng, spread_s=spread_s)))
        for wid, readers in batch:
            problems += finish(c, wid, readers, rng)
    return problems


def takeover_run(c: Cluster, tag: str, rng: random.Random) -> tuple[list[str], int]:
    """A run whose worker is SIGKILLed with its second stage in flight; a fresh worker joins.
    The problems found, and the highest attempt the run's events carry."""
    wid = start_run(c, tag)
    readers = readers_for(c, wid, rng, spread_s=4.0)
    assert c.stub._events(tag)[0].wait(60), f"{wid}: its held stage never started"
    running = httpx.get(f"{c.replicas[0].url}/v1/pipelines/{wid}", headers=c.headers, timeout=30).json()
    victim = c.workers.pop(running["executor_id"])
    victim.kill()
    c.retired.append(victim)
    c.stub.let_go(tag)
    fresh = c.spawn_worker().wait_ready()
    c.workers[fresh.name] = fresh
    problems = finish(c, wid, readers, rng)
    attempts = max((a for r in readers for _, _, a in r.numbered), default=0)
    if attempts < 2:
        problems.append(f"{wid}: crossed a takeover but no event says attempt 2")
    return problems, attempts
