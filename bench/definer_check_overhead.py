"""What the definer-routine rule adds to ``check_safety`` (issue 24): the 22 TPC-H queries
checked with a workspace policy that lists no definer routines, then with one listing a few
(what a connection whose role may call SECURITY DEFINER routines carries), then the same with
a routine's name in the text (in a comment, so the verdict is unchanged). The rule reads the
statement again (PostgreSQL: pglast; MySQL: sqlglot's tokens) only when a listed name (or, on
PostgreSQL, a ``U&`` escape) appears in it: the third case is its full cost. Printed per
dialect: the median per query of each case and the differences. No target of its own;
``bench/sql_check_latency.py`` holds the 2 ms one for the whole check.

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
        cases = (("no definer routines", plain, ""), (f"{len(ROUTINES)} definer routines", with_routines, ""),
                 ("... a name in the text", with_routines, "exec_sql "))
        for label, policy, mention in cases:
            refused = sum(not check_safety(f"{sql} /* {mention}*/", dialect, relations=policy).safe
                          for sql in queries)  # warm up
            times = []
            for n in range(args.repeat):
                for sql in queries:
                    text = f"{sql} /* {mention}repeat {n} */"
                    start = time.perf_counter()
                    check_safety(text, dialect, relations=policy)
                    times.append(time.perf_counter() - start)
            medians[label] = statistics.median(times) * 1000
            print(f"{dialect:8s} {label:22s} median {medians[label]:.3f} ms per query ({refused} of {len(queries)} refused)")
        low, listed, mentioned = medians.values()
        print(f"{dialect:8s} the rule adds {listed - low:+.3f} ms per query, {mentioned - low:+.3f} ms when a name appears")


if __name__ == "__main__":
    main()
