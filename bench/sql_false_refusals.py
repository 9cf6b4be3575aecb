"""False refusals and missed writes of the SQL safety check, on SQL nobody here wrote.

Corpora (``scripts/fetch_test_data.py`` fetches them; this script fetches what is missing):

- PostgreSQL's regression suite (from pglast's sdist): every statement, split with pglast's
  scanner, kept when PostgreSQL's parser (libpg_query) parses it;
- sqlglot's ``identity.sql`` lines and the TPC-H / TPC-DS queries (as written and sqlglot's
  optimized rewrite), run as PostgreSQL and as DuckDB SQL, kept when that engine's parser
  parses them.

Each statement is classified read / non-read by the ground truth in ``tests/`` —
``sql_ground_truth`` (pglast + the local server's ``pg_proc``) and ``sql_ground_truth_duckdb``
(DuckDB's parser + ``duckdb_functions()``) — which never calls the check under test. Then
``check_safety(sql, dialect)`` judges it. Printed per corpus and dialect: reads refused
(count, %, by the verdict's rule, examples) and, for the regression suite, non-reads allowed:
those any static check could see (target 0), and apart, those only a user-defined function's
body makes non-reads (a function created earlier in the suite that writes, or runs dynamic
SQL): the engine guard's job, listed by function. Targets (issue 11): reads refused < 1 %,
non-reads allowed 0. A check that raises counts as a refusal under rule ``exception``.

Decisions: a read refused for a deliberate policy is counted apart from false refusals and
printed with its own figure: the issue requires secret catalogs (``pg_authid``,
``pg_stat_activity``, ``pg_settings``...) to be refused on every engine (rule
``sensitive_table``), and the check refuses ``current_setting`` of a setting that may hold
credentials (``primary_conninfo``, custom dotted settings such as ``app.jwt_secret``). The
target applies to the rest; the total is printed too. The identity/TPC corpora are judged on reads only (their non-reads are few and nobody's target).

    .venv/bin/python bench/sql_false_refusals.py [--limit N] [--show K] [--json]
        [--postgres-url URL | --families-only]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


@dataclass
class Case:
    corpus: str
    where: str
    sql: str
    truth: object  # sql_ground_truth.Truth
    verdict: object = None  # SafetyVerdict
    seconds: float = 0.0


def _load_corpora():
    spec = importlib.util.spec_from_file_location("fetch_test_data", ROOT / "scripts" / "fetch_test_data.py")
    corpora = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpora)
    if not corpora.present():
        corpora.fetch()
    if not corpora.regress_present():
        corpora.fetch_regress()
    return corpora


def regress_cases(corpora, truth, limit: int | None) -> tuple[list[Case], int]:
    """The regression suite's parsed statements, resolved once every file was observed."""
    from sql_ground_truth import read_script, split_psql_script

    cases, split = [], 0
    for path in corpora.regress_files():
        for line, sql in split_psql_script(read_script(path)):
            split += 1
            verdict = truth.observe(sql, path.name)
            if verdict is not None:
                cases.append(Case("regress", f"{path.name}:{line}", sql, verdict))
            if limit and len(cases) >= limit:
                break
        if limit and len(cases) >= limit:
            break
    for case in cases:
        case.truth = truth.resolve(case.truth, case.where.split(":")[0])
    return cases, split


def other_cases(corpora, classify, limit: int | None) -> dict[str, tuple[list[Case], int]]:
    """``{corpus: (cases the engine parses, statements offered)}`` for identity/TPC-H/TPC-DS."""
    sources = {
        "identity.sql": [(f"identity.sql:{n}", sql) for n, sql in corpora.identity_lines()],
        "TPC-H": [(f"{name} {form}", sql) for name, original, optimized in corpora.tpch_queries()
                  for form, sql in (("as written", original), ("optimized", optimized)) if sql],
        "TPC-DS": [(f"{name} {form}", sql) for name, original, optimized in corpora.tpcds_queries()
                   for form, sql in (("as written", original), ("optimized", optimized)) if sql],
    }
    found = {}
    for corpus, statements in sources.items():
        statements = statements[:limit] if limit else statements
        cases = [Case(corpus, where, sql, truth) for where, sql in statements
                 if (truth := classify(sql)) is not None]
        found[corpus] = (cases, len(statements))
    return found


def judge(cases: list[Case], dialect: str) -> None:
    from baton.specialists.sql.safety import check_safety

    for case in cases:
        start = time.perf_counter()
        try:
            case.verdict = check_safety(case.sql, dialect)
        except Exception as error:  # a crash of the check under test is a finding, not a bench failure
            case.verdict = _Crash(f"{type(error).__name__}: {error}")
        case.seconds = time.perf_counter() - start


@dataclass(frozen=True)
class _Crash:
    reason: str
    safe: bool = False
    rule: str = "exception"


def _one_line(sql: str, width: int = 150) -> str:
    lines = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    text = re.sub(r"\s+", " ", " ".join(lines)).strip()
    return text if len(text) <= width else text[:width - 1] + "…"


def summarize(cases: list[Case], show: int) -> dict:
    reads = [c for c in cases if c.truth.read]
    non_reads = [c for c in cases if not c.truth.read]
    refused = [c for c in reads if not c.verdict.safe]
    policy = [c for c in refused if _by_policy(c.verdict)]
    allowed = [c for c in non_reads if c.verdict.safe]
    rules = Counter(c.verdict.rule for c in refused)
    guard = [c for c in allowed if c.truth.engine_guard]
    by_function = Counter(c.truth.reasons[0] for c in guard)
    times = [c.seconds for c in cases]
    return {
        "statements": len(cases), "reads": len(reads), "non_reads": len(non_reads),
        "reads_refused": len(refused), "reads_refused_pct": 100 * len(refused) / len(reads) if reads else 0.0,
        "refused_by_policy": len(policy),
        "false_refusals": len(refused) - len(policy),
        "false_refusals_pct": 100 * (len(refused) - len(policy)) / len(reads) if reads else 0.0,
        "refused_by_rule": [
            {"rule": rule, "count": count,
             "examples": [{"where": c.where, "sql": _one_line(c.sql), "reason": c.verdict.reason}
                          for c in refused if c.verdict.rule == rule][:show]}
            for rule, count in rules.most_common(10)],
        "non_reads_allowed": [{"where": c.where, "kind": c.truth.kind, "why": c.truth.reasons[0],
                               "sql": _one_line(c.sql)} for c in allowed if not c.truth.engine_guard],
        "engine_guard": [{"why": why, "count": count, "first": at[0], "at": at}
                         for why, count in by_function.most_common()
                         for at in [[c.where for c in guard if c.truth.reasons[0] == why]]],
        "engine_guard_statements": len(guard),
        "check_ms": {"total": 1000 * sum(times), "median": 1000 * statistics.median(times) if times else 0.0},
    }


def _by_policy(verdict) -> bool:
    """A refusal the check makes on purpose: a secret catalog (or every session's activity), a
    setting that may hold credentials, or the server's paths (rule ``server_path``, issue 24)."""
    return verdict.rule in ("sensitive_table", "server_path") or (
        verdict.rule == "dangerous_function" and "current_setting()" in verdict.reason)


def _print_refusals(summary: dict) -> None:
    met = "MET" if summary["false_refusals_pct"] < 1 else "NOT MET"
    print(f"  reads refused: {summary['reads_refused']:,} of {summary['reads']:,} "
          f"({summary['reads_refused_pct']:.2f} %): by policy {summary['refused_by_policy']:,} "
          f"(secret catalogs, credential-bearing settings), false refusals {summary['false_refusals']:,} "
          f"({summary['false_refusals_pct']:.2f} %)   target < 1 %: {met}")
    for entry in summary["refused_by_rule"]:
        print(f"    {entry['rule'] or '(none)':<24} {entry['count']:>6,}")
        for example in entry["examples"]:
            print(f"      {example['where']}: {example['sql']}")
            print(f"        -> {_one_line(example['reason'], 140)}")


def print_regress(summary: dict, header: str) -> None:
    print(header)
    print(f"  statements: {summary['statements']:,} (reads {summary['reads']:,}, non-reads "
          f"{summary['non_reads']:,}); check_safety {summary['check_ms']['total'] / 1000:.1f} s, "
          f"median {summary['check_ms']['median']:.3f} ms per statement")
    _print_refusals(summary)
    allowed = summary["non_reads_allowed"]
    print(f"  non-reads allowed (a static check can see them): {len(allowed):,}   "
          f"target 0: {'MET' if not allowed else 'NOT MET'}")
    for entry in allowed:
        print(f"    {entry['where']}  [{entry['kind']}; {entry['why']}]  {entry['sql']}")
    print(f"  non-reads allowed that no static check can see (the engine guard's job): "
          f"{summary['engine_guard_statements']:,} statements, by function:")
    for entry in summary["engine_guard"]:
        print(f"    {entry['count']:>5,}  {entry['why']}  (first: {entry['first']})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="at most N statements per corpus")
    parser.add_argument("--show", type=int, default=2, help="examples per refusal rule (default 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead")
    parser.add_argument("--postgres-url", default=os.environ.get("BATON_TEST_POSTGRES_URL", DEFAULT_URL),
                        help="server whose pg_proc classifies functions (default: BATON_TEST_POSTGRES_URL)")
    parser.add_argument("--families-only", action="store_true",
                        help="classify functions by the name families alone (no server)")
    args = parser.parse_args()
    logging.getLogger("sqlglot").setLevel(logging.CRITICAL)
    sys.path.insert(0, str(ROOT / "tests"))
    import pglast

    from sql_ground_truth import PostgresGroundTruth
    from sql_ground_truth_duckdb import DuckDBGroundTruth
    from sql_side_effects import FunctionCatalog

    corpora = _load_corpora()
    if args.families_only:
        pg_catalog = FunctionCatalog.families_only("postgres")
    else:
        try:
            pg_catalog = FunctionCatalog.from_postgres(args.postgres_url)
        except Exception as error:  # psycopg.Error and connection failures alike
            print(f"cannot read pg_proc at {args.postgres_url}: {error}\n(use --families-only to run without a "
                  f"server)", file=sys.stderr)
            return 2
    duck_catalog = FunctionCatalog.from_duckdb()
    started = time.perf_counter()
    report: dict = {"catalogs": {}, "regress": None, "others": {}}
    for catalog in (pg_catalog, duck_catalog):
        report["catalogs"][catalog.engine] = {
            "source": catalog.version or "name families only", "volatile": len(catalog.volatile),
            "side_effecting": len(catalog.side_effecting()), "unclassified": catalog.unclassified()}

    truth = PostgresGroundTruth(pg_catalog)
    cases, split = regress_cases(corpora, truth, args.limit)
    judge(cases, "postgres")
    report["regress"] = {"files": len(corpora.regress_files()), "split": split, **summarize(cases, args.show)}

    duck = DuckDBGroundTruth(duck_catalog)
    for dialect, classify in (("postgres", PostgresGroundTruth(pg_catalog).classify), ("duckdb", duck.classify)):
        for corpus, (found, offered) in other_cases(corpora, classify, args.limit).items():
            reads = [c for c in found if c.truth.read]
            judge(reads, dialect)
            summary = summarize(reads, args.show)
            report["others"][f"{dialect} {corpus}"] = {
                "offered": offered, "parsed": len(found), "reads": summary["reads"],
                **{key: summary[key] for key in ("reads_refused", "reads_refused_pct", "refused_by_policy",
                                                 "false_refusals", "false_refusals_pct", "refused_by_rule")}}
    duck.close()
    report["seconds"] = time.perf_counter() - started

    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    for engine, info in report["catalogs"].items():
        print(f"catalog {engine}: {info['source']}: {info['volatile']} volatile functions, "
              f"{info['side_effecting']} with side effects by family, unclassified: {info['unclassified'] or 'none'}")
    regress = report["regress"]
    print_regress(regress, f"\nPostgreSQL regression suite (pglast {pglast.__version__}'s sdist, "
                           f"{regress['files']} files, {regress['split']:,} statements split, "
                           f"{regress['statements']:,} parse), dialect postgres:")
    print("\nOther corpora (reads only):")
    print(f"  {'dialect / corpus':<24} {'offered':>8} {'parse':>7} {'reads':>7} {'refused':>8} {'%':>7}")
    for name, entry in report["others"].items():
        print(f"  {name:<24} {entry['offered']:>8,} {entry['parsed']:>7,} {entry['reads']:>7,} "
              f"{entry['reads_refused']:>8,} {entry['reads_refused_pct']:>6.2f}%")
    for name, entry in report["others"].items():
        if entry["reads_refused"]:
            print(f"\n{name}:")
            _print_refusals(entry)
    print(f"\n{report['seconds']:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
