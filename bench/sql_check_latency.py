"""What the SQL safety check adds to each query: ``check_safety`` time on the 22 TPC-H queries.

For each dialect (postgres, duckdb, mysql, sqlite) every TPC-H query as written (sqlglot's
fixture, fetched by ``scripts/fetch_test_data.py``) goes through ``check_safety`` once to warm
up (that first call, which loads catalogs and compiles patterns, is printed apart), then
``--repeat`` more times, interleaved across queries. Printed per dialect: the median and p95
of all those calls, the slowest query's median, and how many queries the check refused (a
refusal would make the figure meaningless: it is the latency of a correct "yes" we want).
Target (issue 11): median within 2 ms.

Wall time on a shared machine includes waiting for a core, so each call's CPU time (the
process's, DuckDB's threads included) is measured too and printed beside it with the load
average: on a busy machine the CPU median is the check's own cost.

Each repeat appends a distinct trailing comment (``/* repeat N */``), so a result cache keyed
by the text, should the check grow one, cannot answer in its place: the figure is the cost of
checking a query the process has not seen, which is what a model's new SQL is.

    .venv/bin/python bench/sql_check_latency.py [--repeat 100] [--dialects postgres,duckdb,mysql,sqlite]
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIALECTS = ("postgres", "duckdb", "mysql", "sqlite")
TARGET_MS = 2.0


def _tpch_queries() -> list[tuple[str, str]]:
    spec = importlib.util.spec_from_file_location("fetch_test_data", ROOT / "scripts" / "fetch_test_data.py")
    corpora = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpora)
    if not corpora.present():
        corpora.fetch()
    return [(name, original) for name, original, _ in corpora.tpch_queries()]


def measure(queries: list[tuple[str, str]], dialect: str, repeat: int) -> dict:
    from baton.specialists.sql.safety import check_safety

    first = []
    refused = {}
    for name, sql in queries:
        start = time.perf_counter()
        verdict = check_safety(sql, dialect)
        first.append(time.perf_counter() - start)
        if not verdict.safe:
            refused[name] = f"{verdict.rule}: {verdict.reason}"
    per_query: dict[str, list[float]] = {name: [] for name, _ in queries}
    cpu: list[float] = []
    for run in range(repeat):
        for name, sql in queries:
            text = f"{sql}\n/* repeat {run} */"
            start, start_cpu = time.perf_counter(), time.process_time()
            verdict = check_safety(text, dialect)
            cpu.append(time.process_time() - start_cpu)
            per_query[name].append(time.perf_counter() - start)
            if not verdict.safe:
                refused.setdefault(name, f"{verdict.rule}: {verdict.reason} (with the repeat comment)")
    samples = [s for values in per_query.values() for s in values]
    slowest = max(per_query, key=lambda n: statistics.median(per_query[n]))
    return {
        "median_ms": 1000 * statistics.median(samples),
        "cpu_median_ms": 1000 * statistics.median(cpu),
        "p95_ms": 1000 * statistics.quantiles(samples, n=20)[18],
        "slowest": (slowest, 1000 * statistics.median(per_query[slowest])),
        "first_call_ms": 1000 * first[0],
        "first_pass_median_ms": 1000 * statistics.median(first),
        "refused": refused,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=100, help="timed calls per query and dialect (default 100)")
    parser.add_argument("--dialects", default=",".join(DIALECTS), help="comma-separated (default: all four)")
    args = parser.parse_args()
    logging.getLogger("sqlglot").setLevel(logging.CRITICAL)
    queries = _tpch_queries()
    import sqlglot
    import sqlglot.parser

    compiled = "compiled (sqlglotc)" if sqlglot.parser.__file__.endswith(".so") else "pure Python"
    print(f"check_safety on the {len(queries)} TPC-H queries, {args.repeat} timed calls each per dialect; "
          f"sqlglot {sqlglot.__version__} {compiled}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print(f"{'dialect':<9} {'median ms':>10} {'CPU median ms':>14} {'p95 ms':>8} {'slowest query (median ms)':>28} "
          f"{'first call ms':>14} {'refused':>8}")
    results = {}
    for dialect in args.dialects.split(","):
        result = results[dialect] = measure(queries, dialect.strip(), args.repeat)
        slowest = f"{result['slowest'][0]} ({result['slowest'][1]:.3f})"
        print(f"{dialect:<9} {result['median_ms']:>10.3f} {result['cpu_median_ms']:>14.3f} {result['p95_ms']:>8.3f} {slowest:>28} "
              f"{result['first_call_ms']:>14.1f} {len(result['refused']):>8}")
    for dialect, result in results.items():
        for name, why in result["refused"].items():
            print(f"  {dialect} refused {name}: {why}")
    worst = max(r["median_ms"] for r in results.values())
    worst_cpu = max(r["cpu_median_ms"] for r in results.values())
    refusals = sum(len(r["refused"]) for r in results.values())
    for label, figure in (("wall", worst), ("CPU", worst_cpu)):
        verdict = "MET" if figure <= TARGET_MS and not refusals else "NOT MET"
        print(f"target median within {TARGET_MS:g} ms per query on TPC-H (every dialect, no refusal), {label} time: "
              f"{verdict} (worst median {figure:.3f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
