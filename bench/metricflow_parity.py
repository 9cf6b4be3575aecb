"""Baton on two real dbt MetricFlow projects, against MetricFlow's own rows (issue 22).

    .venv/bin/python bench/metricflow_parity.py [--engines duckdb,postgres] [--verbose]

The projects (``tests/fixtures/metricflow``: the tutorial that ships with dbt-metricflow, and
MetricFlow's own ``simple_manifest`` test project with its test tables) are loaded as they
are; their tables are created on each engine; every case of ``cases.yaml`` is asked as a
structured query (MetricFlow's own query spec) and, where it has one, as a question in words.
Expected rows were recorded from MetricFlow itself (``scripts/metricflow_oracle.py``).

Each answer is **exact** (MetricFlow's rows: equal multisets, numbers within relative 1e-9,
dates as ISO, order only where the case orders), **refused** (the construct named), **asked
back** (a question the parser would not read, not a guess), or **wrong**. Target: 0 wrong.
Engines: DuckDB, SQLite, PostgreSQL (``BATON_TEST_POSTGRES_URL``) and MariaDB/MySQL
(``BATON_TEST_MYSQL_URL``); a server engine without its variable is skipped, said so.
"""

from __future__ import annotations

import argparse
import asyncio
import os
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
from baton.semantic.loading import load_model
from baton.specialists.sql.connection import SQLConnection
from metricflow_projects import PROJECTS, ROW_CAP, cases, load, outcome

SERVERS = {"postgres": "BATON_TEST_POSTGRES_URL", "mysql": "BATON_TEST_MYSQL_URL"}


def _file(project: str, folder: Path, kind: str) -> tuple[str, object]:
    url = f"{kind}:///{folder / f'{project}.{kind}'}"
    engine = sa.create_engine(url)
    load(engine, project, time_spine=True)  # the project's time spine: Baton joins it (join_to_timespine)
    engine.dispose()
    return url, None


def _server(project: str, base: str) -> tuple[str, object]:
    """A fresh database on a PostgreSQL or MariaDB server with the project's tables, and its drop."""
    postgres = base.startswith("postgresql")
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    name = f"baton_mf_{project}_{uuid.uuid4().hex[:6]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"' if postgres else f"CREATE DATABASE {name}")
    url = sa.make_url(base).set(database=name).render_as_string(hide_password=False)
    engine = sa.create_engine(url)
    load(engine, project, time_spine=True)  # the project's time spine: Baton joins it (join_to_timespine)
    engine.dispose()

    def drop() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' if postgres else f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()

    return url, drop


async def run(engines: list[str], verbose: bool) -> int:
    all_cases = cases()
    models = {project: load_model(path) for project, path in PROJECTS.items()}
    tally: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    by_construct: dict[str, Counter] = defaultdict(Counter)
    wrong = 0
    with tempfile.TemporaryDirectory() as folder:
        for engine in engines:
            for project, model in models.items():
                if engine in SERVERS:
                    url, drop = _server(project, os.environ[SERVERS[engine]])
                else:
                    url, drop = _file(project, Path(folder), engine)
                connection = SQLConnection(url, id=project, allow_privileged_role=True, row_cap=ROW_CAP)
                layer = SemanticLayer(model, connection)
                started = time.perf_counter()
                count = 0
                try:
                    for case in (c for c in all_cases if c["project"] == project):
                        for mode in ("structured", "question"):
                            if mode == "question" and not case.get("question"):
                                continue
                            kind, detail = await outcome(layer, case, mode)
                            count += 1
                            tally[(engine, project, mode)][kind] += 1
                            by_construct[case["construct"]][kind] += 1
                            wrong += kind == "wrong"
                            if verbose or kind == "wrong":
                                said = case.get("question") if mode == "question" else case["mf"]
                                print(f"  {engine:8} {case['id']:4} {mode:10} {kind:10} {said} {detail[:160]}")
                finally:
                    await connection.aclose()
                    if drop is not None:
                        drop()
                elapsed = time.perf_counter() - started
                print(f"{engine:8} {project:16} {count:3} answers in {elapsed:5.2f} s")
    print("\nper engine, project and kind of question:  exact / refused / asked back / wrong")
    for (engine, project, mode), counter in sorted(tally.items()):
        print(f"  {engine:8} {project:16} {mode:10}  {counter['exact']:3} / {counter['refused']:3} / "
              f"{counter['asked back']:3} / {counter['wrong']:3}")
    print("\nper construct (all engines):  exact / refused / asked back / wrong")
    for construct, counter in sorted(by_construct.items()):
        print(f"  {construct:40} {counter['exact']:3} / {counter['refused']:3} / {counter['asked back']:3} / {counter['wrong']:3}")
    total = Counter()
    for counter in tally.values():
        total.update(counter)
    print(f"\ntotal: {sum(total.values())} answers: {total['exact']} exact, {total['refused']} refused (construct named), "
          f"{total['asked back']} asked back, {total['wrong']} wrong (target 0)")
    return 1 if wrong else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="duckdb,postgres,mysql,sqlite")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    for engine, variable in SERVERS.items():
        if engine in engines and not os.environ.get(variable):
            print(f"{engine} skipped: {variable} is not set")
            engines.remove(engine)
    raise SystemExit(asyncio.run(run(engines, args.verbose)))


if __name__ == "__main__":
    main()
