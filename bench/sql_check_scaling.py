"""How the SQL safety check's time grows with the statement: time(64k) / time(8k) per generator.

The check holds the interpreter lock, so a statement that takes seconds stalls a whole server
(issue 24: 12 s for 20,000 characters through a backtracking pattern). Each adversarial
generator of ``tests/sql_adversarial.py`` (deep nesting, long identifiers, names and calls in
strings, many arguments / columns / strings, long IN lists, unclosed quotes and comments,
repeated operators, long literals, many CTEs and UNION branches, deep concatenations) builds a
statement of 8,000 and of 64,000 characters; ``check_safety`` judges each in every dialect,
the best of ``--repeat`` runs (a collection first, so one run's garbage is not the next one's
cost). Printed: the CPU times of this process (other engineers' load does not count; wall
time's ratio beside them), their ratio, the ratio with Python's cyclic garbage collector
paused, the ratio of the check's own work count (the test's evidence,
``tests/test_sql_safety_scaling.py``: deterministic) and the verdict's rule at 64k. Target:
ratio <= 10 (linear is 8). A ratio below 8 is common (fixed costs; an early refusal); one
under two milliseconds is clock noise and not counted.

Reading the figures: where the work ratio is 8 and the ratio with the collector paused is
about 8 but the plain ratio is higher, the excess is the collector, not the check: a large
tree (sqlglot's, or pglast's JSON) survives the young generations, and the full collection
that follows traverses the whole process heap (modules, catalogs) once per threshold crossed,
a step with the heap's size rather than a trend in the statement's. ``baton serve`` freezes its
start-up heap (``gc.freeze``, ``cli/serving.py``), and so does this bench unless ``--no-freeze``:
then a full collection walks only what the checks built.

    .venv/bin/python bench/sql_check_scaling.py [--repeat 3] [--dialects postgres,duckdb,mysql,sqlite]
        [--generators nesting,unions,...] [--no-freeze]
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from sql_adversarial import GENERATORS

DIALECTS = ("postgres", "duckdb", "mysql", "sqlite")
SMALL, LARGE = 8_000, 64_000
TARGET = 10.0


def _best(sql: str, dialect: str, repeat: int, *, collector: bool) -> tuple[float, float, str, int]:
    """Best CPU and wall seconds of ``repeat`` checks, the rule, the work count. Without
    ``collector``, Python's cyclic garbage collector is paused during each check."""
    from baton.specialists.sql.safety import check_safety
    from baton.specialists.sql.safety.work import counting

    cpu, wall, rule, work = float("inf"), float("inf"), "", 0
    for _ in range(repeat):
        gc.collect()
        if not collector:
            gc.disable()
        try:
            with counting() as count:
                started, started_cpu = time.perf_counter(), time.process_time()
                verdict = check_safety(sql, dialect)
                cpu = min(cpu, time.process_time() - started_cpu)
                wall = min(wall, time.perf_counter() - started)
        finally:
            gc.enable()
        rule, work = verdict.rule or "safe", count.total
    return cpu, wall, rule, work


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dialects", default=",".join(DIALECTS))
    parser.add_argument("--generators", default=",".join(GENERATORS))
    parser.add_argument("--no-freeze", action="store_true",
                        help="leave the start-up heap in the collector's way (a library caller that never freezes)")
    args = parser.parse_args()
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    from baton.specialists.sql.safety import check_safety

    dialects = args.dialects.split(",")
    for dialect in dialects:
        check_safety("SELECT 1", dialect)  # load catalogs and parsers once, outside the figures
    if not args.no_freeze:  # as `baton serve` does once started (cli/serving.py: frozen_after_startup)
        gc.collect()
        gc.freeze()
    print(f"check_safety: best of {args.repeat}, {SMALL:,} vs {LARGE:,} characters; CPU ms of this process "
          f"(wall time beside it; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"target ratio <= {TARGET:g} (linear is 8); 'no gc': the same with the cyclic collector paused; start-up heap "
          f"{'left in the collector' if args.no_freeze else 'frozen, as baton serve does'}")
    print(f"{'generator':22} {'dialect':9} {'8k ms':>8} {'64k ms':>8} {'ratio':>6} {'no gc':>6} {'wall':>6} "
          f"{'work':>5}  rule at 64k")
    over, worst, started = [], 0.0, time.perf_counter()
    for name in args.generators.split(","):
        small, large = GENERATORS[name](SMALL), GENERATORS[name](LARGE)
        for dialect in dialects:
            cpu_small, wall_small, _, work_small = _best(small, dialect, args.repeat, collector=True)
            cpu_large, wall_large, rule, work_large = _best(large, dialect, args.repeat, collector=True)
            bare_small, _, _, _ = _best(small, dialect, args.repeat, collector=False)
            bare_large, _, _, _ = _best(large, dialect, args.repeat, collector=False)
            ratio = cpu_large / max(cpu_small, 1e-6)
            meaningful = cpu_large >= 0.002  # under two milliseconds the ratio is clock noise
            if meaningful:
                worst = max(worst, ratio)
                if ratio > TARGET:
                    over.append(f"{name}/{dialect}")
            print(f"{name:22} {dialect:9} {cpu_small * 1000:8.2f} {cpu_large * 1000:8.2f} "
                  f"{ratio:5.1f}{'' if meaningful else '*'} {bare_large / max(bare_small, 1e-6):6.1f} "
                  f"{wall_large / max(wall_small, 1e-6):6.1f} {work_large / max(work_small, 1):5.1f}  {rule}", flush=True)
    print(f"* under 2 ms at 64k: not counted. Worst ratio {worst:.1f}; over the target: {', '.join(over) or 'none'}; "
          f"{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
