#!/usr/bin/env python3
"""Record MetricFlow's own answers to the parity cases (tests/fixtures/metricflow/oracle/*.json).

Runs outside Baton's environment, in a virtual environment with MetricFlow itself (its
dependencies conflict with Baton's; no network is needed once installed):

    python3 -m venv /tmp/mf && /tmp/mf/bin/pip install 'dbt-metricflow[dbt-duckdb]==0.13.0' 'dbt-core<1.11'
    # tutorial: a dbt project; build it once (its seeds become its tables, and target/semantic_manifest.json)
    cp -r tests/fixtures/metricflow/tutorial /tmp/tutorial && cd /tmp/tutorial && printf '%s\n' \
      'mf_tutorial:' '  target: dev' '  outputs:' '    dev:' '      type: duckdb' '      path: /tmp/tutorial/tutorial.duckdb' \
      > profiles.yml && DBT_PROFILES_DIR=. /tmp/mf/bin/dbt build && cd -
    # simple_manifest: its table snapshots into a DuckDB file (the same loader the tests use, in Baton's venv)
    .venv/bin/python -c "import sys; sys.path.insert(0, 'tests'); import sqlalchemy as sa, metricflow_projects as m; \
      m.load(sa.create_engine('duckdb:////tmp/simple_manifest.duckdb'), 'simple_manifest', time_spine=True)"
    # the cases as MetricFlow query requests, then MetricFlow's answers
    .venv/bin/python -c "import json, yaml; d = yaml.safe_load(open('tests/fixtures/metricflow/cases.yaml')); \
      [json.dump([{'id': c['id'], **c['mf'], 'input_order': True} for c in d[p]], open(f'/tmp/q_{p}.json', 'w')) for p in d]"
    DBT_PROFILES_DIR=/tmp/tutorial /tmp/mf/bin/python scripts/metricflow_oracle.py --project /tmp/tutorial \
      --queries /tmp/q_tutorial.json --out /tmp/o_tutorial.json --mode engine --client dbt
    /tmp/mf/bin/python scripts/metricflow_oracle.py --project tests/fixtures/metricflow/simple_manifest \
      --db /tmp/simple_manifest.duckdb --queries /tmp/q_simple_manifest.json --out /tmp/o_simple_manifest.json --mode engine

then keep id, request, columns, rows and error of each result in oracle/<project>.json; the rows of
results over 2,000 rows (a time spine's days) are kept apart, compressed, by ``--long-out``
(``oracle/simple_manifest.long.json.gz``: ``{id: {"columns", "rows"}}``), their count in the JSON:

    /tmp/mf/bin/python scripts/metricflow_oracle.py --project tests/fixtures/metricflow/simple_manifest \
      --db /tmp/simple_manifest.duckdb --queries /tmp/q_simple_manifest.json --out /tmp/o_simple_manifest.json \
      --mode engine --long-out tests/fixtures/metricflow/oracle/simple_manifest.long.json.gz

What follows runs many MetricFlow queries in one process and records their SQL and rows as JSON.

Reference-oracle driver for MetricFlow 0.211.0 (dbt-metricflow 0.13.0) on DuckDB.

Projects:
  * a dbt project dir (has dbt_project.yml; needs target/semantic_manifest.json from `dbt parse`/`dbt build`):
    the manifest is read exactly as `mf` does (parse_manifest_from_dbt_generated_manifest); the DuckDB file is
    taken from profiles.yml (`path:` of the first output) unless --db is given.
  * a MetricFlow test-format YAML dir (tests/fixtures/metricflow/simple_manifest): loaded with
    metricflow_semantics.test_helpers.manifest_helpers.mf_load_manifest_from_yaml_directory
    with template_mapping {"source_schema": --schema (default "main")}; --db defaults to
    the DuckDB file given with --db.

Input (--queries FILE, or stdin with "-"): JSON list of objects
  {"id": optional, "metrics": [...], "group_by": [...], "where": [...] or "...", "order_by": [...],
   "limit": N, "start_time": "YYYY-MM-DD[THH:MM:SS]", "end_time": ..., "saved_query": "name",
   rarely needed: "group_by_objs": [{"name","grain","date_part","entity_path"}], "min_max_only": bool,
   "apply_group_by": bool (False = `mf query` without GROUP BY, dims only), "input_order": bool
   (order output columns as requested; `mf query` does not, MetricFlow's itests do)}
  (names as on the `mf query` CLI: metric_time__month, customer__customer_country, "-revenue_usd" for DESC, ...)

Output (--out FILE, default stdout): JSON list, one object per query:
  {"id", "request", "sql" (as `mf query --explain` prints it), "columns", "column_types" (DuckDB types),
   "rows" (JSON values: datetime -> ISO string "YYYY-MM-DDTHH:MM:SS", date -> "YYYY-MM-DD", Decimal -> int if
   integral else float), "row_count", "elapsed_s", "error" (null, or the error text; then no rows)}

Modes (--mode):
  direct (default): MetricFlowEngine.explain() builds the SQL; it is executed with the duckdb Python API, so values
                    and column types are DuckDB-native.
  engine:           MetricFlowEngine.query(), i.e. the same path as `mf query` (values pass through
                    MetricFlowDataTable: ints become Decimal, dates become datetime). column_types is then null.
Client (--client):
  duckdb (default): a minimal SqlClient over a duckdb connection (read-only). No dbt involved; fast.
  dbt:              for dbt projects only: dbt_metricflow's CLIConfiguration / AdapterBackedSqlClient, exactly as
                    `mf query` (slower start-up: runs `dbt debug`). Requires DBT_PROFILES_DIR or profiles.yml in project.
"""
from __future__ import annotations

import argparse
import datetime as dt
import decimal
import gzip
import json
import math
import os
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

import duckdb
import yaml
from metricflow.data_table.mf_table import MetricFlowDataTable
from metricflow.engine.metricflow_engine import MetricFlowEngine, MetricFlowQueryRequest
from metricflow.protocols.sql_client import SqlEngine
from metricflow.sql.render.duckdb_renderer import DuckDbSqlPlanRenderer
from metricflow_semantics.model.semantic_manifest_lookup import SemanticManifestLookup
from metricflow_semantics.sql.sql_bind_parameters import SqlBindParameterSet

NO_PARAMETERS = SqlBindParameterSet()
LONG = 2000  # results over this many rows keep their rows apart (--long-out)


class DuckDbSqlClient:
    """Minimal MetricFlow SqlClient backed by a duckdb connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._renderer = DuckDbSqlPlanRenderer()

    @property
    def sql_engine_type(self) -> SqlEngine:
        return SqlEngine.DUCKDB

    @property
    def sql_plan_renderer(self) -> DuckDbSqlPlanRenderer:
        return self._renderer

    def query(self, stmt: str, sql_bind_parameter_set: SqlBindParameterSet = NO_PARAMETERS) -> MetricFlowDataTable:
        cur = self._con.cursor()
        cur.execute(stmt, dict(sql_bind_parameter_set.param_dict) or None)
        cols = [d[0] for d in cur.description]
        return MetricFlowDataTable.create_from_rows(column_names=cols, rows=cur.fetchall())

    def execute(self, stmt: str, sql_bind_parameter_set: SqlBindParameterSet = NO_PARAMETERS) -> None:
        self._con.cursor().execute(stmt, dict(sql_bind_parameter_set.param_dict) or None)

    def dry_run(self, stmt: str, sql_bind_parameter_set: SqlBindParameterSet = NO_PARAMETERS) -> None:
        self._con.cursor().execute(f"EXPLAIN {stmt}", dict(sql_bind_parameter_set.param_dict) or None)

    def close(self) -> None:
        self._con.close()

    def render_bind_parameter_key(self, bind_parameter_key: str) -> str:
        return f"${bind_parameter_key}"


def to_json_value(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return v
    if isinstance(v, decimal.Decimal):
        if v.is_finite() and v == v.to_integral_value():
            return int(v)
        return float(v)
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    return str(v)


def parse_time(s: str | None) -> dt.datetime | None:
    if s is None:
        return None
    return dt.datetime.fromisoformat(s)


def duckdb_path_from_profiles(project: Path) -> str | None:
    profiles_dir = Path(os.environ.get("DBT_PROFILES_DIR", project))
    p = profiles_dir / "profiles.yml"
    if not p.exists():
        return None
    profiles = yaml.safe_load(p.read_text())
    proj = yaml.safe_load((project / "dbt_project.yml").read_text())
    prof = profiles[proj["profile"]]
    return prof["outputs"][prof.get("target", "dev")].get("path")


def load_manifest(project: Path, schema: str):
    if (project / "dbt_project.yml").exists():
        from metricflow_semantics.model.dbt_manifest_parser import parse_manifest_from_dbt_generated_manifest

        sm = project / "target" / "semantic_manifest.json"
        if not sm.exists():
            sys.exit(f"{sm} missing: run `dbt parse` (or `dbt build`) in {project} first")
        return "dbt", parse_manifest_from_dbt_generated_manifest(manifest_json_string=sm.read_text())
    from metricflow_semantics.test_helpers.manifest_helpers import mf_load_manifest_from_yaml_directory

    return "yaml", mf_load_manifest_from_yaml_directory(project, {"source_schema": schema})


def build_group_by_objs(objs):
    """MetricFlow integration-test style group-by objects: {"name", "grain"?, "date_part"?, "entity_path"?}."""
    from metricflow_semantic_interfaces.type_enums.date_part import DatePart
    from metricflow_semantics.specs.query_param_implementations import (
        DimensionOrEntityParameter,
        TimeDimensionParameter,
    )

    out = []
    for o in objs:
        kw = dict(o)
        if kw.get("date_part") or kw.get("grain"):
            if kw.get("date_part"):
                kw["date_part"] = DatePart(kw["date_part"])
            out.append(TimeDimensionParameter(**kw))
        else:
            out.append(DimensionOrEntityParameter(**kw))
    return tuple(out)


def build_request(q: dict) -> MetricFlowQueryRequest:
    where = q.get("where")
    if isinstance(where, str):
        where = [where]
    return MetricFlowQueryRequest.create(
        saved_query_name=q.get("saved_query"),
        metric_names=q.get("metrics"),
        group_by_names=q.get("group_by") or None,
        group_by=build_group_by_objs(q["group_by_objs"]) if q.get("group_by_objs") else None,
        limit=q.get("limit"),
        time_constraint_start=parse_time(q.get("start_time")),
        time_constraint_end=parse_time(q.get("end_time")),
        where_constraints=where or None,
        order_by_names=q.get("order_by") or None,
        min_max_only=bool(q.get("min_max_only", False)),
        apply_group_by=bool(q.get("apply_group_by", True)),
        # `mf query` uses False (the default); MetricFlow's integration tests use True.
        order_output_columns_by_input_order=bool(q.get("input_order", False)),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", required=True, type=Path)
    ap.add_argument("--queries", required=True, help="JSON file with a list of queries, or - for stdin")
    ap.add_argument("--out", default="-")
    ap.add_argument("--db", help="DuckDB file (default: from the dbt project's profiles.yml)")
    ap.add_argument("--schema", default="main", help="$source_schema substitution for YAML projects")
    ap.add_argument("--mode", choices=["direct", "engine"], default="direct")
    ap.add_argument("--client", choices=["duckdb", "dbt"], default="duckdb")
    ap.add_argument("--long-out", type=Path, help="also write the rows of results over 2,000 rows here (.json.gz)")
    ap.add_argument("--pretty", action="store_true", help="indent the output JSON (large for time-spine queries)")
    ap.add_argument("--sql-with-descriptions", action="store_true", help="keep MetricFlow's -- comments in the SQL")
    args = ap.parse_args()

    project = args.project.resolve()
    queries = json.load(sys.stdin if args.queries == "-" else open(args.queries))

    t0 = time.perf_counter()
    if args.client == "dbt":
        from dbt_metricflow.cli.cli_configuration import CLIConfiguration

        cfg = CLIConfiguration()
        cfg.setup(dbt_project_path=project, configure_file_logging=False)
        engine = cfg.mf
        db_path = args.db or duckdb_path_from_profiles(project)
    else:
        kind, manifest = load_manifest(project, args.schema)
        db_path = args.db or duckdb_path_from_profiles(project)
        if db_path is None:
            sys.exit("--db names the DuckDB file with the project's tables")
        con = duckdb.connect(db_path, read_only=True)
        engine = MetricFlowEngine(
            semantic_manifest_lookup=SemanticManifestLookup(manifest), sql_client=DuckDbSqlClient(con)
        )
    direct_con = duckdb.connect(db_path, read_only=True) if args.mode == "direct" else None
    print(f"[run_queries] setup {time.perf_counter() - t0:.2f}s  db={db_path}", file=sys.stderr)

    results = []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        res: dict = {"id": q.get("id", i), "request": q, "sql": None, "columns": None, "column_types": None,
                     "rows": None, "row_count": None, "error": None}
        try:
            req = build_request(q)
            explain = engine.explain(mf_request=req)
            stmt = explain.sql_statement
            res["sql"] = stmt.sql if args.sql_with_descriptions else stmt.without_descriptions.sql
            if args.mode == "direct":
                cur = direct_con.cursor()
                cur.execute(stmt.sql)
                res["columns"] = [d[0] for d in cur.description]
                res["column_types"] = [str(d[1]) for d in cur.description]
                rows = cur.fetchall()
            else:
                qr = engine.query(mf_request=req)
                df = qr.result_df
                res["columns"] = list(df.column_names)
                rows = list(df.rows)
            res["rows"] = [[to_json_value(v) for v in r] for r in rows]
            res["row_count"] = len(rows)
        except Exception as e:
            res["error"] = f"{type(e).__name__}: {e}"
            if os.environ.get("RUN_QUERIES_TRACEBACK"):
                traceback.print_exc()
        res["elapsed_s"] = round(time.perf_counter() - t, 4)
        results.append(res)
        status = "ERR" if res["error"] else f"{res['row_count']} rows"
        print(f"[run_queries] {res['id']}: {status} in {res['elapsed_s']:.3f}s", file=sys.stderr)

    out = json.dumps(results, indent=1 if args.pretty else None, default=to_json_value)
    if args.out == "-":
        print(out)
    else:
        Path(args.out).write_text(out)
    if args.long_out:
        long = {r["id"]: {"columns": r["columns"], "rows": r["rows"]} for r in results if (r["row_count"] or 0) > LONG}
        args.long_out.write_bytes(gzip.compress(json.dumps(long, separators=(",", ":")).encode(), 9, mtime=0))
    print(f"[run_queries] total {time.perf_counter() - t0:.2f}s for {len(queries)} queries", file=sys.stderr)


if __name__ == "__main__":
    main()
