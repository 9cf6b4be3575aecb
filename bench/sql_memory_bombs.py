"""What a memory bomb costs, per statement: this process, the database server, and its temp files.

Each bomb runs through ``SQLConnection.query`` (the check, then the engine guard: what model SQL
meets) with the default options, one fresh subprocess per bomb, and prints the outcome (a
typed refusal or error, or a truncated result), the time, and three growths against the
targets of issue 24 (MB here are MiB, as PostgreSQL and DuckDB count their limits):

- this process: peak RSS above the warmed-up process, at most +256 MB;
- the server: PostgreSQL's backend of the statement, MariaDB's ``mysqld`` (local servers only),
  peak RSS above its RSS before the statement, at most +256 MB;
- temp spill: the most the engine's temporary files held while the statement ran (PostgreSQL's
  ``base/pgsql_tmp``, DuckDB's spill folder), at most 256 MB. MariaDB and SQLite unlink their
  temporary files as they create them, so none is measured there ("-").

Peaks are Linux's VmHWM, reset before the statement by writing 5 to ``/proc/<pid>/clear_refs``
(a server process needs root or its owner); where the kernel refuses, RSS and folder sizes are
polled every 20 ms instead (the method is printed). PostgreSQL and MariaDB come from
BATON_TEST_POSTGRES_URL / BATON_TEST_MYSQL_URL (skipped with a message when unset); those are
administrators here, so the bench opts in with ``allow_privileged_role`` (and PostgreSQL's
``temp_file_limit`` is set, which a least-privilege role cannot: ``baton db grant`` sets it on
the role). At the end, every bomb still over a target is listed.

Run: .venv/bin/python bench/sql_memory_bombs.py [--engine postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TARGET_MB = 256
BOMBS: dict[str, list[tuple[str, str]]] = {  # engine -> (label, sql)
    "postgres": [
        ("issue 11: 2 x repeat 200 MB", "SELECT repeat('x',200000000), repeat('y',200000000)"),
        ("issue 24: 2 x string_agg, 600 x 1 MB", "SELECT length(string_agg(repeat('x', 1000000), '')), "
         "length(string_agg(repeat('y', 1000000), '')) FROM generate_series(1, 600)"),
        ("string_agg of data-sized values", "SELECT length(string_agg(repeat(g::text, 1000), '')) "
         "FROM generate_series(1, 200000) AS g"),
        ("ORDER BY random(), 20M rows", "SELECT count(*) FROM (SELECT g, random() AS r FROM "
         "generate_series(1, 20000000) AS g ORDER BY r) AS s"),
        ("5000 rows x 1 MB", "SELECT g, repeat('x', 1000000) FROM generate_series(1, 5000) AS g"),
        ("1000 rows x 12 MB", "SELECT g, repeat('x', 12000000) FROM generate_series(1, 1000) AS g"),
        ("error text quoting 100 MB", "SELECT (repeat('x', 100000000 + (random() * 0)::int))::int"),
    ],
    "mysql": [
        ("issue 11: repeat 100 MB", "SELECT repeat('x', 100000000)"),
        ("one row of 5 x 16 MB", "SELECT " + ", ".join(f"repeat('{c}', 16000000) AS {c}" for c in "vwxyz")),
        ("5000 rows x 1 MB", "SELECT seq, repeat('x', 1000000) FROM seq_1_to_5000"),
        ("1000 rows x 12 MB", "SELECT seq, repeat('x', 12000000) FROM seq_1_to_1000"),
        ("group_concat, 2000 x 1 MB", "SELECT length(group_concat(repeat('x', 1000000))) FROM seq_1_to_2000"),
    ],
    "sqlite": [
        ("issue 11: printf 300 MB", "SELECT printf('%.*c',300000000,'x')"),
        ("one row of 10 x 15 MB", "SELECT " + ", ".join(f"zeroblob(15000000) AS c{i}" for i in range(10))),
        ("5000 rows x 1 MB", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) "
                             "SELECT x, replace(hex(zeroblob(500000)), '00', 'xx') FROM c"),
    ],
    "duckdb": [
        ("issue 11: string_agg 1 GB", "SELECT string_agg(repeat('x', 1000000), '') FROM range(1000)"),
        ("issue 24: ORDER BY random(), 30M", "SELECT count(*) FROM (SELECT range, random() AS r FROM range(30000000) "
         "ORDER BY r)"),
        ("5000 rows x 1 MB", "SELECT range, repeat('x', 1000000 + (range % 2)::INT) FROM range(5000)"),
        ("list of 2000 x 100 kB", "SELECT list(repeat('x', 100000 + (range % 2)::INT)) FROM range(2000)"),
        ("constant repeat 300 MB", "SELECT repeat('x', 300000000)"),
        ("error text quoting 100 MB", "SELECT (repeat('x', 100000000) || (random() * 0)::INT::VARCHAR)::INT"),
    ],
}
ENV = {"postgres": "BATON_TEST_POSTGRES_URL", "mysql": "BATON_TEST_MYSQL_URL"}


def _status(pid: int | str, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    raise RuntimeError(field)


def _folder_mb(folder: Path) -> float:
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.lstat().st_size
        except OSError:
            pass  # removed while counted
    return total / 2**20


class Peak:
    """The peak RSS growth of one process while a statement runs, and the peak size of a
    temporary folder (either may be absent)."""

    def __init__(self, pid: int | str | None, folder: Path | None) -> None:
        self.pid, self.folder = pid, folder
        self.method = "n/a"
        self._stop = threading.Event()
        self._rss = self._temp = 0.0
        self._base = 0

    def __enter__(self) -> Peak:
        if self.pid is not None:
            try:
                Path(f"/proc/{self.pid}/clear_refs").write_text("5")
                self.method = "VmHWM after reset"
            except OSError:
                self.method = "RSS polled"
            self._base = _status(self.pid, "VmRSS")
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(0.02):
            try:
                if self.pid is not None:
                    self._rss = max(self._rss, _status(self.pid, "VmRSS") - self._base)
                if self.folder is not None and self.folder.is_dir():
                    self._temp = max(self._temp, _folder_mb(self.folder))
            except (OSError, RuntimeError):
                pass  # the process or folder went away

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.pid is not None and self.method.startswith("VmHWM"):
            try:
                self._rss = max(self._rss, _status(self.pid, "VmHWM") - self._base)
            except (OSError, RuntimeError):
                pass

    @property
    def rss_mb(self) -> float | None:
        return self._rss if self.pid is not None else None

    @property
    def temp_mb(self) -> float | None:
        return self._temp if self.folder is not None else None


async def _server(conn) -> tuple[int | None, Path | None]:
    """The server process serving this (pool of one) connection, and its temp folder."""
    try:
        if conn.dialect == "postgres":
            pid, data = (await conn.execute_readonly("SELECT pg_backend_pid(), current_setting('data_directory')")).rows[0]
            return (pid if Path(f"/proc/{pid}").exists() else None), Path(data) / "base" / "pgsql_tmp"
        if conn.dialect == "mysql":
            (pid_file,), = (await conn.execute_readonly("SELECT @@pid_file")).rows
            return int(Path(pid_file).read_text().split()[0]), None
    except (OSError, ValueError):
        pass  # not a local server, or its files are not readable here
    if conn.dialect == "duckdb":
        return None, Path(conn._duckdb_temp) if conn._duckdb_temp else None
    return None, None


async def _run_one(url: str, sql: str) -> dict:
    from baton.specialists.sql.connection import SQLConnection

    conn = SQLConnection(url, allow_privileged_role=True, pool_size=1)
    await conn.execute_readonly("SELECT 1 AS warm")
    await conn.execute_readonly("SELECT 'warm' AS w, 2 AS n")
    server_pid, temp = await _server(conn)
    started = time.perf_counter()
    with Peak(os.getpid(), None) as here, Peak(server_pid, temp) as server:
        try:
            result = await conn.query(sql)
            kept = sum(len(str(v)) for row in result.rows for v in row)
            outcome = f"{'truncated' if result.truncated else 'complete'}: {len(result.rows)} rows, {kept / 1e6:.1f} MB kept"
            typed = True
        except Exception as exc:
            verdict = getattr(exc, "verdict", None)
            if verdict is not None:
                outcome, typed = f"refused by the check ({verdict.rule})", True
            else:
                code = getattr(getattr(exc, "error", None), "code", None)
                outcome = f"{type(exc).__name__}({getattr(exc, 'error_class', '?')}, {code})"
                typed = type(exc).__name__ == "SQLExecutionError"
    elapsed = time.perf_counter() - started
    await conn.aclose()
    return {"outcome": outcome, "typed": typed, "rss_mb": here.rss_mb, "server_mb": server.rss_mb,
            "temp_mb": server.temp_mb, "seconds": elapsed, "method": f"{here.method}; server {server.method}"}


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


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=sorted(BOMBS))
    parser.add_argument("--one", nargs=2, metavar=("URL", "SQL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(_run_one(*args.one))))
        return
    engines = [args.engine] if args.engine else ["postgres", "mysql", "sqlite", "duckdb"]
    over: list[str] = []
    methods = set()
    with tempfile.TemporaryDirectory() as tmp:
        urls = _databases(Path(tmp))
        print(f"{'engine':9} {'bomb':36} {'outcome':52} {'proc +MB':>8} {'server +MB':>10} {'temp MB':>7} {'time s':>7}")
        for engine in engines:
            if engine not in urls:
                print(f"{engine:9} skipped: set {ENV[engine]} to a server URL")
                continue
            for label, sql in BOMBS[engine]:
                done = subprocess.run([sys.executable, __file__, "--one", urls[engine], sql],
                                      capture_output=True, text=True, timeout=600)
                if done.returncode != 0 or not done.stdout.strip():
                    print(f"{engine:9} {label:36} subprocess failed: {done.stderr.strip().splitlines()[-1:]}")
                    over.append(f"{engine}: {label}: the subprocess failed")
                    continue
                r = json.loads(done.stdout.strip().splitlines()[-1])
                methods.add(r["method"])
                print(f"{engine:9} {label:36} {r['outcome']:52} {_cell(r['rss_mb']):>8} {_cell(r['server_mb']):>10} "
                      f"{_cell(r['temp_mb']):>7} {r['seconds']:>7.2f}")
                misses = [f"{what} +{value:.0f} MB" for what, value in (("process", r["rss_mb"]), ("server", r["server_mb"]))
                          if value is not None and value > TARGET_MB]
                if r["temp_mb"] is not None and r["temp_mb"] > TARGET_MB:
                    misses.append(f"temp {r['temp_mb']:.0f} MB")
                if not r["typed"]:
                    misses.append(f"untyped end: {r['outcome']}")
                if misses:
                    over.append(f"{engine}: {label}: {', '.join(misses)}")
    print(f"(peaks measured as {' / '.join(sorted(methods)) or 'n/a'}; defaults: byte_cap 4 MB, max_row_bytes 16 MB, "
          "DuckDB memory_limit 128MB and max_temp_directory_size 256MB, PostgreSQL work_mem 32MB, temp_file_limit 256MB)")
    print(f"targets: +{TARGET_MB} MB process, +{TARGET_MB} MB server, {TARGET_MB} MB temp spill, a typed end")
    print("still over target:" if over else "still over target: none")
    for line in over:
        print(f"  {line}")


if __name__ == "__main__":
    main()
