"""What a memory bomb costs this process: each query of issue 11 (and wide results of many
rows) through ``SQLConnection.execute_readonly`` with the default options, one fresh
subprocess per bomb, printing the outcome (typed error or truncated result), the peak RSS
above the warmed-up process, and the time. Target: within +150 MB and a typed end.

The peak is Linux's VmHWM, reset after warm-up by writing 5 to /proc/self/clear_refs (when
the kernel refuses, the difference of VmHWM before and after is printed instead).
PostgreSQL and MariaDB come from BATON_TEST_POSTGRES_URL / BATON_TEST_MYSQL_URL (skipped
with a message when unset); those are administrators here, so the bench opts in with
``allow_privileged_role``. Rows marked "gap" are what ``limits.py`` documents as not bounded.

Run: .venv/bin/python bench/sql_memory_bombs.py [--engine postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BOMBS: dict[str, list[tuple[str, str]]] = {  # engine -> (label, sql)
    "postgres": [
        ("issue: 2 x repeat 200 MB", "SELECT repeat('x',200000000), repeat('y',200000000)"),
        ("5000 rows x 1 MB", "SELECT g, repeat('x', 1000000) FROM generate_series(1, 5000) AS g"),
        ("1000 rows x 12 MB", "SELECT g, repeat('x', 12000000) FROM generate_series(1, 1000) AS g"),
        ("gap: error text quoting 100 MB", "SELECT repeat('x', 100000000)::int"),
    ],
    "mysql": [
        ("issue: repeat 100 MB", "SELECT repeat('x', 100000000)"),
        ("one row of 5 x 16 MB", "SELECT " + ", ".join(f"repeat('{c}', 16000000) AS {c}" for c in "vwxyz")),
        ("5000 rows x 1 MB", "SELECT seq, repeat('x', 1000000) FROM seq_1_to_5000"),
        ("1000 rows x 12 MB", "SELECT seq, repeat('x', 12000000) FROM seq_1_to_1000"),
    ],
    "sqlite": [
        ("issue: printf 300 MB", "SELECT printf('%.*c',300000000,'x')"),
        ("one row of 10 x 15 MB", "SELECT " + ", ".join(f"zeroblob(15000000) AS c{i}" for i in range(10))),
        ("5000 rows x 1 MB", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) "
                             "SELECT x, replace(hex(zeroblob(500000)), '00', 'xx') FROM c"),
    ],
    "duckdb": [
        ("issue: string_agg 1 GB", "SELECT string_agg(repeat('x', 1000000), '') FROM range(1000)"),
        ("5000 rows x 1 MB", "SELECT range, repeat('x', 1000000 + (range % 2)::INT) FROM range(5000)"),
        ("list of 2000 x 100 kB", "SELECT list(repeat('x', 100000 + (range % 2)::INT)) FROM range(2000)"),
        ("gap: constant repeat 300 MB", "SELECT repeat('x', 300000000)"),
        ("gap: error text quoting 100 MB", "SELECT (repeat('x', 100000000) || (random() * 0)::INT::VARCHAR)::INT"),
    ],
}
ENV = {"postgres": "BATON_TEST_POSTGRES_URL", "mysql": "BATON_TEST_MYSQL_URL"}


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    raise RuntimeError(field)


async def _run_one(url: str, sql: str) -> dict:
    from baton.specialists.sql.engines import ConnectionOptions, SQLConnection

    opt_in = {"allow_privileged_role": True} if "allow_privileged_role" in {f.name for f in dataclasses.fields(ConnectionOptions)} else {}
    conn = SQLConnection(url, **opt_in)
    await conn.execute_readonly("SELECT 1 AS warm")
    await conn.execute_readonly("SELECT 'warm' AS w, 2 AS n")
    try:
        Path("/proc/self/clear_refs").write_text("5")
        baseline, method = _status("VmRSS"), "VmHWM after reset"
    except OSError:
        baseline, method = _status("VmHWM"), "VmHWM difference"
    started = time.perf_counter()
    try:
        result = await conn.execute_readonly(sql)
        kept = sum(len(str(v)) for row in result.rows for v in row)
        outcome = f"{'truncated' if result.truncated else 'complete'}: {len(result.rows)} rows, {kept / 1e6:.1f} MB kept"
        typed = result.truncated
    except Exception as exc:
        code = getattr(getattr(exc, "error", None), "code", None)
        outcome = f"{type(exc).__name__}({getattr(exc, 'error_class', '?')}, {code})"
        typed = type(exc).__name__ == "SQLExecutionError" and str(getattr(exc, "error_class", "")) == "resource_limit"
    elapsed = time.perf_counter() - started
    peak = _status("VmHWM")
    await conn.aclose()
    return {"outcome": outcome, "typed": typed, "rss_mb": peak - baseline, "seconds": elapsed, "method": method}


def _databases(tmp: Path) -> dict[str, str]:
    import sqlite3

    import duckdb

    urls = {}
    for kind in ("sqlite", "duckdb"):
        path = tmp / f"bombs.{kind}"
        con = sqlite3.connect(path) if kind == "sqlite" else duckdb.connect(str(path))
        con.execute("CREATE TABLE filler (x INTEGER)")
        if kind == "sqlite":
            con.commit()
        con.close()
        urls[kind] = f"{kind}:///{path}"
    for kind, var in ENV.items():
        if os.environ.get(var):
            urls[kind] = os.environ[var]
    return urls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=sorted(BOMBS))
    parser.add_argument("--one", nargs=2, metavar=("URL", "SQL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(_run_one(*args.one))))
        return
    engines = [args.engine] if args.engine else ["postgres", "mysql", "sqlite", "duckdb"]
    with tempfile.TemporaryDirectory() as tmp:
        urls = _databases(Path(tmp))
        print(f"{'engine':9} {'bomb':32} {'outcome':56} {'RSS +MB':>8} {'time s':>7}  within target")
        methods = set()
        for engine in engines:
            if engine not in urls:
                print(f"{engine:9} skipped: set {ENV[engine]} to a server URL")
                continue
            for label, sql in BOMBS[engine]:
                done = subprocess.run([sys.executable, __file__, "--one", urls[engine], sql],
                                      capture_output=True, text=True, timeout=600)
                if done.returncode != 0 or not done.stdout.strip():
                    print(f"{engine:9} {label:32} subprocess failed: {done.stderr.strip().splitlines()[-1:]}")
                    continue
                r = json.loads(done.stdout.strip().splitlines()[-1])
                methods.add(r["method"])
                ok = "yes" if r["typed"] and r["rss_mb"] <= 150 else "NO"
                print(f"{engine:9} {label:32} {r['outcome']:56} {r['rss_mb']:>8} {r['seconds']:>7.2f}  {ok}")
        print(f"(peak RSS measured as {', '.join(sorted(methods)) or 'n/a'}; defaults: byte_cap 4 MB, "
              "max_row_bytes 16 MB, DuckDB memory_limit 128MB)")


if __name__ == "__main__":
    main()
