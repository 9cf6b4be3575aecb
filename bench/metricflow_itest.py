"""MetricFlow's own integration cases asked of Baton, against the rows of each case's check query (issue 27).

    .venv/bin/python bench/metricflow_itest.py [--engines duckdb,postgres] [--only FILE] [--verbose]

The 266 cases of ``dbt-labs/metricflow`` (``tests_metricflow/integration/test_cases/itest_*.yaml``,
commit 65b9d42, copied under ``tests/fixtures/metricflow_itest``, README there) each name a
model, metrics, group-bys, a where filter, a time constraint, order and limit, and a
``check_query``: SQL whose rows are the expected answer. Every table snapshot is created on each
engine; each ``check_query`` is rendered for the engine (its Jinja helpers in ``itest_cases.py``)
and run; the case is asked of Baton as MetricFlow's structured query (``mf_query``).

Each case is **passed** (the check query's rows: equal multisets, numbers within relative 1e-9,
dates and timestamps compared exactly, order only where the case checks it), **refused** (the
construct named: the ranking at the end is what computing each would unlock), **wrong**, or
**errored** (Baton's SQL failed, or the check query did). Target: 0 wrong.
Engines: DuckDB, PostgreSQL (``BATON_TEST_POSTGRES_URL``: a fresh database, dropped after).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import sqlalchemy as sa

from baton.semantic.layer import SemanticLayer
from baton.semantic.metricflow import load_metricflow
from baton.specialists.sql.connection import SQLConnection
from itest_cases import MODELS, ROW_CAP, all_cases, ask, load_tables


def _database(engine: str, folder: Path) -> tuple[str, str, object]:
    """Baton's URL, the check queries' URL (DuckDB: a copy, as one file opens read-only or not), the drop."""
    if engine == "duckdb":
        made = sa.create_engine(f"duckdb:///{folder / 'itest.duckdb'}")
        load_tables(made)
        made.dispose()
        shutil.copy(folder / "itest.duckdb", folder / "check.duckdb")
        return f"duckdb:///{folder / 'itest.duckdb'}", f"duckdb:///{folder / 'check.duckdb'}", None
    base = os.environ["BATON_TEST_POSTGRES_URL"]
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    name = f"baton_mf_itest_{uuid.uuid4().hex[:6]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = sa.make_url(base).set(database=name).render_as_string(hide_password=False)
    made = sa.create_engine(url)
    load_tables(made)
    made.dispose()

    def drop() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()

    return url, url, drop


async def run(engines: list[str], only: str | None, verbose: bool) -> int:
    cases = [c for c in all_cases() if only is None or only in c["file"]]
    models = {name: load_metricflow(path) for name, path in MODELS.items()}
    tally: dict[tuple[str, str], Counter] = defaultdict(Counter)
    refusals: dict[str, Counter] = defaultdict(Counter)
    wrong = 0
    with tempfile.TemporaryDirectory() as folder:
        for engine in engines:
            url, check_url, drop = _database(engine, Path(folder))
            check = sa.create_engine(check_url)
            started = time.perf_counter()
            connection = SQLConnection(url, id="metricflow_itest", allow_privileged_role=True, row_cap=ROW_CAP)
            layers = {name: SemanticLayer(models[name], connection) for name in models}
            try:
                for case in cases:
                    kind, detail = await ask(layers[case["model"]], case, engine, check)
                    tally[(engine, case["file"])][kind] += 1
                    if kind == "refused":
                        refusals[detail][engine] += 1
                    wrong += kind == "wrong"
                    if verbose or kind in ("wrong", "errored"):
                        print(f"  {engine:8} {case['file']:34} {case['name']:60} {kind:8} {detail[:200]}")
            finally:
                await connection.aclose()
                check.dispose()
                if drop is not None:
                    drop()
            print(f"{engine:8} {len(cases)} cases in {time.perf_counter() - started:5.2f} s")
    print("\nper engine and file:  passed / refused / wrong / errored")
    for (engine, file), counter in sorted(tally.items()):
        print(f"  {engine:8} {file:36} {counter['passed']:3} / {counter['refused']:3} / {counter['wrong']:3} / "
              f"{counter['errored']:3}")
    for engine in engines:
        total = Counter()
        for (e, _), counter in tally.items():
            if e == engine:
                total.update(counter)
        n = sum(total.values())
        print(f"total {engine:8} {n} cases: {total['passed']} passed ({100 * total['passed'] / max(n, 1):.1f} %), "
              f"{total['refused']} refused (construct named), {total['wrong']} wrong (target 0), {total['errored']} errored")
    print("\nrefusals ranked by the cases computing them would unlock (per engine):")
    for construct, counter in sorted(refusals.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"  {' '.join(f'{e}={counter[e]:<3}' for e in engines)} {construct}")
    return 1 if wrong else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="duckdb,postgres")
    parser.add_argument("--only", help="only the cases of files whose name contains this")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    if "postgres" in engines and not os.environ.get("BATON_TEST_POSTGRES_URL"):
        print("postgres skipped: BATON_TEST_POSTGRES_URL is not set")
        engines.remove("postgres")
    raise SystemExit(asyncio.run(run(engines, args.only, args.verbose)))


if __name__ == "__main__":
    main()
