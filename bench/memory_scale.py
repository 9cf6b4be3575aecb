"""Memory at scale: insert-with-dedup-and-gate latency, and rebuild time for 1M events.

    .venv/bin/python bench/memory_scale.py                    # 1k / 10k / 100k; rebuild of 250k events, extrapolated
    .venv/bin/python bench/memory_scale.py --events 1000000   # the full 1M-event rebuild (~10 min on 2 busy cores)
    .venv/bin/python bench/memory_scale.py --url postgresql+psycopg://...   # (uses a fresh schema)

Part 1 fills ONE workspace with N active learnings (bulk-loaded through the journal and
projection in large transactions), then times ``MemoryStore.remember`` - indexed candidate
lookup, SequenceMatcher, the contradiction gate, the append with its hash chain and the
projection update, each its own committed transaction - for a mix of a third new subjects
(create), a third independent repeats (corroborate) and a third changed values
(supersede). Target: under 5 ms per insert at 100k.

Part 2 appends ``--events`` events (default 250k so a run takes a few minutes; the
rebuild time is linear in events and the script prints the 1M extrapolation) (40 % record creations, 60 % corroborations, usage
counts and decays on them), then rebuilds the projection from the journal alone, checks it
equals the live one, and verifies the hash chain.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from baton.memory import MemoryStore, Principal, Provenance, RecordDraft, TrustedAuthenticator
from baton.memory.journal import NewEvent
from baton.memory.projection import record_payload, stream_of
from baton.memory.writer import new_record


def open_store(url: str | None, tmp: str, name: str) -> MemoryStore:
    if url is None:
        return MemoryStore(f"sqlite:///{os.path.join(tmp, name)}", authenticator=TrustedAuthenticator())
    from sqlalchemy import create_engine, text
    schema = f"bench_{name.split('.')[0]}_{uuid.uuid4().hex[:8]}"
    with create_engine(url).begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    return MemoryStore(url, authenticator=TrustedAuthenticator(), schema=schema)


def draft(i: int, value: str, session: str) -> RecordDraft:
    return RecordDraft("learning", f"Table t{i} column c{i % 97} stores amounts in cents; divide by {value}",
                       entity=f"t{i}", attribute=f"c{i % 97}-unit", value=value, category="format_discovery",
                       connection_id=f"db{i % 5}", scope=f"connection:db{i % 5}", provenance=Provenance("bench", session_id=session))


def bulk_load(store: MemoryStore, scope, start: int, stop: int, batch: int = 5000) -> None:
    for lo in range(start, stop, batch):
        def op(tx, lo=lo):
            records = [new_record(tx, draft(i, "100", f"load{i}").validated()) for i in range(lo, min(stop, lo + batch))]
            tx.append([NewEvent(stream_of(r.id), "record.created", {"record": record_payload(r)}, 0, r.provenance[0])
                       for r in records])
        store._write(scope, op)


def insert_latency(store: MemoryStore, scope, population: int, inserts: int) -> dict[str, float]:
    times, actions = [], {}
    for k in range(inserts):
        i = (k * 7919) % population
        mode = k % 3
        if mode == 0:
            d = draft(population + 10_000_000 + k, "100", f"new{k}")  # a new subject
        elif mode == 1:
            d = draft(i, "100", f"other{k}")  # same statement, independent session
        else:
            d = draft(i, "1000", f"fix{k}")  # the value changed
        t0 = time.perf_counter()
        result = store.remember(scope, d)
        times.append((time.perf_counter() - t0) * 1000)
        actions[result.action] = actions.get(result.action, 0) + 1
    times.sort()
    return {"mean": statistics.fmean(times), "p50": times[len(times) // 2], "p95": times[int(len(times) * 0.95)],
            "max": times[-1], **{f"n_{a}": n for a, n in actions.items()}}


def part1(url: str | None, tmp: str, inserts: int, levels: list[int]) -> None:
    store = open_store(url, tmp, "latency.db")
    scope = store.open(Principal("bench"))
    loaded = 0
    print(f"[insert] backend={store.engine.dialect.name} inserts per level={inserts} (1/3 create, 1/3 corroborate, 1/3 supersede)")
    for level in levels:
        t0 = time.perf_counter()
        bulk_load(store, scope, loaded, level)
        load_s = time.perf_counter() - t0
        loaded = level
        active = len(store.list_records(scope, limit=10)) and level
        r = insert_latency(store, scope, level, inserts)
        print(f"[insert] {active:>7,} active records: mean {r['mean']:.2f} ms  p50 {r['p50']:.2f} ms  "
              f"p95 {r['p95']:.2f} ms  max {r['max']:.2f} ms  (bulk load {load_s:.1f}s; "
              + ", ".join(f"{k[2:]} {v}" for k, v in r.items() if k.startswith("n_")) + ")")
    store.close()


def part2(url: str | None, tmp: str, events: int, batch: int = 10_000) -> None:
    store = open_store(url, tmp, "rebuild.db")
    scope = store.open(Principal("bench-rebuild"))
    t0 = time.perf_counter()
    written, n = 0, 0
    while written < events:
        size = min(batch, events - written)
        creations = max(1, int(size * 0.4))

        def op(tx, n=n, size=size, creations=creations):
            records = [new_record(tx, draft(n + j, "100", f"g{n + j}").validated()) for j in range(creations)]
            evs = [NewEvent(stream_of(r.id), "record.created", {"record": record_payload(r)}, None, r.provenance[0])
                   for r in records]
            conf = {r.id: r.confidence for r in records}
            for j in range(size - creations):
                r = records[j % creations]
                kind = j % 3
                if kind == 0:
                    conf[r.id] = min(1.0, round(conf[r.id] + 0.1, 4))
                    evs.append(NewEvent(stream_of(r.id), "record.corroborated", {"confidence": conf[r.id]}, None,
                                        Provenance("bench", session_id=f"c{n}-{j}")))
                elif kind == 1:
                    evs.append(NewEvent(stream_of(r.id), "record.applied", {}, None))
                else:
                    conf[r.id] = round(conf[r.id] - 0.02, 4)
                    evs.append(NewEvent(stream_of(r.id), "record.decayed", {"confidence": conf[r.id], "status": "active",
                                                                          "as_of": tx.now}, None))
            tx.append(evs)
        store._write(scope, op)
        written += size
        n += creations
    gen_s = time.perf_counter() - t0
    print(f"[rebuild] backend={store.engine.dialect.name} appended {written:,} events ({n:,} records) in {gen_s:.1f}s "
          f"({written / gen_s:,.0f} events/s, batches of {batch:,})")
    report = store.rebuild(scope, compare=False)
    print(f"[rebuild] rebuilt projection from {report.events:,} events -> {report.records:,} records in "
          f"{report.seconds:.1f}s ({report.events / report.seconds:,.0f} events/s)")
    t0 = time.perf_counter()
    diff = store.check_projection(scope)
    print(f"[rebuild] rebuilt == live: {diff == []} (compared in {time.perf_counter() - t0:.1f}s)")
    t0 = time.perf_counter()
    chain = store.verify(scope)
    print(f"[rebuild] hash chain verified: {chain.ok} over {chain.events:,} events in {time.perf_counter() - t0:.1f}s")
    if written < 1_000_000:
        print(f"[rebuild] extrapolated rebuild time for 1,000,000 events: ~{report.seconds * 1_000_000 / written:.0f}s "
              f"(linear; measured {written:,})")
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="SQLAlchemy URL (default: a temporary SQLite file)")
    ap.add_argument("--inserts", type=int, default=600)
    ap.add_argument("--levels", default="1000,10000,100000")
    ap.add_argument("--events", type=int, default=250_000,
                    help="events for the rebuild part (default 250k, extrapolated to 1M; pass 1000000 for the full run, ~10 min on 2 busy cores)")
    ap.add_argument("--skip-rebuild", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        part1(args.url, tmp, args.inserts, [int(x) for x in args.levels.split(",")])
        if not args.skip_rebuild:
            part2(args.url, tmp, args.events)


if __name__ == "__main__":
    main()
