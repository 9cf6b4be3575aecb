"""What the definer-routine rule adds to ``check_safety`` (issue 24): the 22 TPC-H queries
checked with a workspace policy that lists no definer routines, then with one listing a few
(what a connection whose role may call SECURITY DEFINER routines carries). The rule runs only
in the second case: one more reading of the statement (PostgreSQL: pglast; MySQL: sqlglot's
tokens). Printed per dialect: the median per query of each case and the difference. No target
of its own; ``bench/sql_check_latency.py`` holds the 2 ms one for the whole check.

Each repeat appends a distinct trailing comment, so nothing cached by text can answer.

    .venv/bin/python bench/definer_check_overhead.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

from baton.specialists.sql.safety import RelationPolicy, check_safety

ROOT = Path(__file__).resolve().parent.parent
ROUTINES = frozenset({("public", "exec_sql"), ("public", "leak"), ("ops", "run_report"), ("public", "Audit")})


def _tpch_queries() -> list[str]:
    spec = importlib.util.spec_from_file_location("fetch_test_data", ROOT / "scripts" / "fetch_test_data.py")
    corpora = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(corpora)
    if not corpora.present():
        corpora.fetch()
    return [original for _, original, _ in corpora.tpch_queries()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    queries = _tpch_queries()
    plain = RelationPolicy(frozenset({"public"}), "public")
    with_routines = RelationPolicy(frozenset({"public"}), "public", definer_routines=ROUTINES)
    for dialect in ("postgres", "mysql"):
        medians = {}
        for label, policy in (("no definer routines", plain), (f"{len(ROUTINES)} definer routines", with_routines)):
            refused = sum(not check_safety(sql, dialect, relations=policy).safe for sql in queries)  # warm up
            times = []
            for n in range(args.repeat):
                for sql in queries:
                    text = f"{sql} /* repeat {n} */"
                    start = time.perf_counter()
                    check_safety(text, dialect, relations=policy)
                    times.append(time.perf_counter() - start)
            medians[label] = statistics.median(times) * 1000
            print(f"{dialect:8s} {label:22s} median {medians[label]:.3f} ms per query ({refused} of {len(queries)} refused)")
        low, high = medians.values()
        print(f"{dialect:8s} the rule adds {high - low:+.3f} ms per query")


if __name__ == "__main__":
    main()
