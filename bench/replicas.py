"""Baton as replicas and workers on one PostgreSQL state: what scaling out buys, and how
fast a worker's events reach a client on another replica.

1. Verified-question throughput (the demo, no model: each answer is a real SQL query, a new
   session and turn, insights written to memory, all on the shared state) with 1 replica,
   then 2 replicas on the same state, the same closed-loop load spread over them. Prints
   answers/s for each and the ratio.
2. Memory writes (issue 25): the same demo at a fixed rate (``--rate`` answers/s across the
   replicas, open loop, ``--seconds`` each) with 1, 2 and 3 replicas; from each replica's
   ``/metrics``, the advisory memory writes (insights, usage counts) offered, stored, shed
   by policy and failed during the run (after the queues drained). Stored should stay at
   >= 99 % of offered with 3 replicas: writes of one workspace share group transactions
   (``baton.memory.group_commit``) instead of queueing one by one on its journal lock.
3. Event latency: pipeline runs started on replica 1, executed by a ``baton worker``,
   followed over SSE on replica 2 (events cross processes through LISTEN/NOTIFY). For each
   event the worker stamps (``ts``), the time until the client on replica 2 read it:
   p50 and p99.

Everything runs on this machine; the load average and core count are printed, since on a
small shared machine the replicas compete for the same cores as the load generator.

Run: .venv/bin/python bench/replicas.py [--postgres URL] [--requests 300] [--concurrency 16] [--runs 10]
       [--rate 87] [--seconds 60] [--only memory|throughput|events]
(default URL: $BATON_TEST_POSTGRES_URL, a server on which a database may be created).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pg_fresh import fresh_database
from scale_rig import StubModel, build_shop, process_env, serve, worker

QUESTIONS = [
    "What was Pokemon revenue by month in 2025?",
    "What was Epson revenue by month in 2025?",
    "What was the profit of each roadshow city?",
    "Which Pokemon products sold the most in 2025?",
]
PLAN = {"question": "two stages", "stages": [
    {"stage_id": "regions", "tool": "query_database", "question": "Regional totals", "depends_on": []},
    {"stage_id": "months", "tool": "query_database", "question": "Monthly sales", "depends_on": ["regions"]},
]}


def throughput(urls: list[str], key: str, requests: int, concurrency: int) -> float:
    headers = {"Authorization": f"Bearer {key}"}
    clients = [httpx.Client(base_url=url, headers=headers, timeout=120) for url in urls]
    failures = []

    def one(i: int) -> None:
        response = clients[i % len(clients)].post("/v1/ask", json={"question": QUESTIONS[i % len(QUESTIONS)]})
        if response.status_code != 200 or response.json().get("error"):
            failures.append(response.text[:200])

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(concurrency)))  # warm-up: connections, first render
        started = time.perf_counter()
        list(pool.map(one, range(requests)))
        elapsed = time.perf_counter() - started
    for client in clients:
        client.close()
    if failures:
        raise SystemExit(f"{len(failures)} failed answers, e.g. {failures[0]}")
    return requests / elapsed


def scrape(url: str, key: str) -> dict[str, float]:
    """The memory write counters of one replica's ``/metrics``."""
    text = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {key}"}, timeout=30).text
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("baton_memory_writes_total{outcome="):
            found[line.split('"')[1]] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("baton_memory_advisory_queued "):
            found["queued"] = float(line.rsplit(" ", 1)[1])
    return found


def settled(urls: list[str], key: str, wait_s: float = 60.0) -> list[dict[str, float]]:
    """Each replica's counters once no advisory write is queued (or after ``wait_s``)."""
    until = time.monotonic() + wait_s
    while True:
        counts = [scrape(url, key) for url in urls]
        if not any(c.get("queued") for c in counts) or time.monotonic() > until:
            return counts
        time.sleep(0.5)


def memory_writes(urls: list[str], key: str, rate: float, seconds: float, concurrency: int) -> dict[str, float]:
    """``rate`` answers/s for ``seconds`` spread over ``urls`` (open loop, at most
    ``concurrency`` in flight); the memory writes the replicas counted meanwhile."""
    headers = {"Authorization": f"Bearer {key}"}
    clients = [httpx.Client(base_url=url, headers=headers, timeout=120) for url in urls]
    failures: list[str] = []

    def one(i: int, start: float) -> None:
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        response = clients[i % len(clients)].post("/v1/ask", json={"question": QUESTIONS[i % len(QUESTIONS)]})
        if response.status_code != 200 or response.json().get("error"):
            failures.append(response.text[:200])

    total = int(rate * seconds)
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda i: one(i, time.perf_counter()), range(len(urls) * 4)))  # warm-up, not counted
        before = settled(urls, key)
        started = time.perf_counter()
        list(pool.map(lambda i: one(i, started), range(total)))
        elapsed = time.perf_counter() - started
    after = settled(urls, key)
    for client in clients:
        client.close()
    counts = {k: sum(a.get(k, 0) - b.get(k, 0) for a, b in zip(after, before))
              for k in ("offered", "stored", "shed", "failed")}
    return {**counts, "answers_per_s": total / elapsed, "failed_answers": len(failures), "queued": sum(a.get("queued", 0) for a in after)}


def event_latency(starter: str, follower: str, key: str, runs: int) -> list[float]:
    headers = {"Authorization": f"Bearer {key}"}
    latencies: list[float] = []
    for _ in range(runs):
        wid = httpx.post(f"{starter}/v1/pipelines", json={"plan": PLAN}, headers=headers, timeout=30).json()["workflow_id"]
        with httpx.stream("GET", f"{follower}/v1/pipelines/{wid}/events", headers=headers, timeout=httpx.Timeout(10, read=120)) as stream:
            name = None
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name not in (None, "end"):
                    event = json.loads(line[6:])
                    if event.get("data", {}).get("stage_id") and name != "pipeline.status":
                        latencies.append((time.time() - event["ts"]) * 1000)
                if name == "end":
                    break
    return latencies


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class _Skip(Exception):
    pass


def memory_part(tmp_path: Path, state_url: str, args: argparse.Namespace) -> None:
    env = process_env(tmp_path / "home-memory", state_url, None)
    processes = []
    print(f"memory writes, {args.rate:g} answers/s across the replicas for {args.seconds:g} s each (open loop):")
    print("  replicas  answers/s  offered   stored     shed   failed  stored/offered")
    try:
        for n in (1, 2, 3):
            replica = serve(f"mem-{n}", env)
            processes.append(replica)
            replica.wait_ready()
            key = processes[0].key()
            got = memory_writes([p.url for p in processes], key, args.rate, args.seconds, args.concurrency)
            share = got["stored"] / got["offered"] * 100 if got["offered"] else 100.0
            print(f"  {n:8d}  {got['answers_per_s']:9.1f}  {got['offered']:7.0f}  {got['stored']:7.0f}  {got['shed']:7.0f}"
                  f"  {got['failed']:7.0f}  {share:13.2f} %"
                  + (f"   ({got['failed_answers']} answers failed)" if got["failed_answers"] else "")
                  + (f"   ({got['queued']:.0f} still queued)" if got["queued"] else ""))
    finally:
        for p in processes:
            p.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", default=os.environ.get("BATON_TEST_POSTGRES_URL"))
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rate", type=float, default=87.0, help="memory part: answers/s across the replicas")
    parser.add_argument("--seconds", type=float, default=60.0, help="memory part: seconds per replica count")
    parser.add_argument("--only", choices=["throughput", "memory", "events"], help="run one part")
    args = parser.parse_args()
    if not args.postgres:
        raise SystemExit("give --postgres URL (or set BATON_TEST_POSTGRES_URL)")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp, fresh_database(args.postgres) as state_url:
        tmp_path = Path(tmp)
        processes = []
        if args.only in (None, "memory"):
            memory_part(tmp_path, state_url, args)
        try:
            if args.only not in (None, "throughput"):
                raise _Skip
            env = process_env(tmp_path / "home", state_url, None)  # one BATON_HOME: the demo database is built once
            first = serve("replica-1", env)
            processes.append(first)
            first.wait_ready()
            key = first.key()
            one = throughput([first.url], key, args.requests, args.concurrency)
            second = serve("replica-2", env)
            processes.append(second)
            second.wait_ready()
            two = throughput([first.url, second.url], key, args.requests, args.concurrency)
            print(f"verified questions, closed loop of {args.concurrency}, {args.requests} answers:")
            print(f"  1 replica : {one:7.1f} answers/s")
            print(f"  2 replicas: {two:7.1f} answers/s   (ratio {two / one:.2f})")
        except _Skip:
            pass
        finally:
            for p in processes:
                p.stop()

        if args.only not in (None, "events"):
            print(f"load average after: {os.getloadavg()[0]:.2f}")
            return
        stub = StubModel().start()
        processes = []
        try:
            shop = build_shop(tmp_path / "shop.sqlite")
            model_env = lambda name: process_env(tmp_path / f"home-{name}", state_url, stub.model_string)
            r1, r2 = serve("r1", model_env("r1"), "--database", shop), serve("r2", model_env("r2"), "--database", shop)
            w = worker("w1", model_env("w1"), "--database", shop, "--poll", "0.1")
            processes += [r1, r2, w]
            for p in processes:
                p.wait_ready()
            key = r1.key()
            event_latency(r1.url, r2.url, key, 1)  # warm-up
            latencies = event_latency(r1.url, r2.url, key, args.runs)
            print(f"worker stage events -> SSE client on another replica ({len(latencies)} events, {args.runs} runs):")
            print(f"  p50 {statistics.median(latencies):6.1f} ms   p99 {percentile(latencies, 99):6.1f} ms   max {max(latencies):6.1f} ms")
        finally:
            for p in processes:
                p.stop()
            stub.stop()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
