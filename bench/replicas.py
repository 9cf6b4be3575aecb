"""Baton as replicas and workers on one PostgreSQL state: what scaling out buys, and how
fast a worker's events reach a client on another replica.

1. Verified-question throughput (the demo, no model: each answer is a real SQL query, a new
   session and turn, insights written to memory, all on the shared state) with 1 replica,
   then 2 replicas on the same state, the same closed-loop load spread over them. Prints
   answers/s for each and the ratio.
2. Event latency: pipeline runs started on replica 1, executed by a ``baton worker``,
   followed over SSE on replica 2 (events cross processes through LISTEN/NOTIFY). For each
   event the worker stamps (``ts``), the time until the client on replica 2 read it:
   p50 and p99.

Everything runs on this machine; the load average and core count are printed, since on a
small shared machine the replicas compete for the same cores as the load generator.

Run: .venv/bin/python bench/replicas.py [--postgres URL] [--requests 300] [--concurrency 16] [--runs 10]
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", default=os.environ.get("BATON_TEST_POSTGRES_URL"))
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    if not args.postgres:
        raise SystemExit("give --postgres URL (or set BATON_TEST_POSTGRES_URL)")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp, fresh_database(args.postgres) as state_url:
        tmp_path = Path(tmp)
        processes = []
        try:
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
        finally:
            for p in processes:
                p.stop()

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
