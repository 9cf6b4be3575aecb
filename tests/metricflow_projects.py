"""The two real MetricFlow projects of the parity tests and bench, and their data on an engine.

- ``tutorial``: the dbt project that ships with ``dbt-metricflow`` (its seeds are its tables);
- ``simple_manifest``: MetricFlow's own test project, with its test tables' snapshots;
- ``llm_benchmarking``: dbt Labs' semantic-layer-llm-benchmarking project (an insurance
  warehouse of 25 semantic models), its seeds as table snapshots;
- ``time_expressions``: ours, time dimensions whose ``expr`` is SQL over ``simple_manifest``'s
  tables (MetricFlow's answers recorded all the same).

Both are fixtures under ``tests/fixtures/metricflow`` (README there: sources, licence). The
expected rows of every parity case were recorded from MetricFlow itself
(``scripts/metricflow_oracle.py``) into ``tests/fixtures/metricflow/oracle/*.json``.
"""

from __future__ import annotations

import copy
import csv
import datetime as dt
import functools
import gzip
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

import db_templates

FIXTURES = Path(__file__).parent / "fixtures" / "metricflow"
PROJECTS = {"tutorial": FIXTURES / "tutorial", "simple_manifest": FIXTURES / "simple_manifest",
            "llm_benchmarking": FIXTURES / "llm_benchmarking", "time_expressions": FIXTURES / "time_expressions"}
_SNAPSHOTS = {"simple_manifest": "simple_model_tables", "llm_benchmarking": "llm_benchmarking_tables",
              "time_expressions": "simple_model_tables"}
_TYPES = {"TIME": "TIMESTAMP", "DATE": "DATE", "STRING": "VARCHAR(255)", "FLOAT": "DOUBLE PRECISION", "BOOLEAN": "BOOLEAN",
          "INT": "BIGINT"}
_TUTORIAL = {  # table -> (seed, {column: type}); dbt-duckdb's seed types, as the oracle's database has them
    "countries": ("countries_seed", {"country": "VARCHAR(255)", "region": "VARCHAR(255)"}),
    "customers": ("customers_seed", {"id_customer": "VARCHAR(255)", "country": "VARCHAR(255)", "ds": "DATE"}),
    "transactions": ("transactions_seed", {"id_transaction": "VARCHAR(255)", "id_order": "VARCHAR(255)",
                                           "id_customer": "VARCHAR(255)", "transaction_amount_usd": "DOUBLE PRECISION",
                                           "transaction_type_name": "VARCHAR(255)", "ds": "DATE"}),
}


def tables(project: str, time_spine: bool = False) -> dict[str, tuple[dict[str, str], list[list[Any]]]]:
    """Each table of a project: its columns with SQL types, and its rows (``time_spine``: also
    MetricFlow's time spine tables, which only MetricFlow reads: for recording its answers). A fresh
    copy of what was read once per process (the time spine's YAML alone took seconds a parse)."""
    return {table: (dict(columns), [list(row) for row in rows]) for table, (columns, rows) in _tables(project, time_spine).items()}


@functools.cache
def _tables(project: str, time_spine: bool) -> dict[str, tuple[dict[str, str], list[list[Any]]]]:
    out: dict[str, tuple[dict[str, str], list[list[Any]]]] = {}
    if project == "tutorial":
        for table, (seed, columns) in _TUTORIAL.items():
            with open(FIXTURES / "tutorial" / "seeds" / "sample_seeds" / f"{seed}.csv", newline="") as f:
                rows = [[None if v == "" else v for v in row.values()] for row in csv.DictReader(f)]
            out[table] = (columns, rows)
        return out
    folders = [_SNAPSHOTS[project], *(["simple_model_time_spine"] if time_spine and project == "simple_manifest" else [])]
    for path in sorted(p for folder in folders for p in (FIXTURES / folder).glob("*.yaml")):
        snapshot = yaml.load(path.read_text(), Loader=db_templates.YAML_LOADER)["table_snapshot"]
        columns = {c["name"]: _TYPES[c["type"]] for c in snapshot["column_definitions"]}
        rows = [[_value(v) for v in row] for row in snapshot["rows"]]
        out[snapshot["table_name"]] = (columns, rows)
    return out


def duckdb_file(folder: Path, project: str, time_spine: bool = False) -> str:
    """The URL of a DuckDB file in ``folder`` holding a project's tables (``load``): a copy of one
    filled once per process."""
    return db_templates.copy_of(f"{project}:{time_spine}", lambda engine: load(engine, project, time_spine),
                                    folder / f"{project}.duckdb")


def _value(value: Any) -> Any:
    return None if value is None or value == "None" else value


def load(engine, project: str, time_spine: bool = False) -> None:
    """Create and fill a project's tables through a SQLAlchemy engine (dropped first)."""
    import sqlalchemy as sa

    quote = engine.dialect.identifier_preparer.quote
    mysql = engine.dialect.name in ("mysql", "mariadb")
    with engine.begin() as conn:
        for table, (columns, rows) in tables(project, time_spine).items():
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {quote(table)}"))
            ddl = ", ".join(f"{quote(c)} {'DATETIME' if mysql and t == 'TIMESTAMP' else t}" for c, t in columns.items())
            conn.execute(sa.text(f"CREATE TABLE {quote(table)} ({ddl})"))
            if rows:
                names = list(columns)
                statement = sa.text(f"INSERT INTO {quote(table)} VALUES ({', '.join(f':p{i}' for i in range(len(names)))})")
                conn.execute(statement, [{f"p{i}": _typed(v, columns[n]) for i, (n, v) in enumerate(zip(names, row))}
                                         for row in rows])


def _typed(value: Any, sql_type: str) -> Any:
    if value is None:
        return None
    if sql_type == "TIMESTAMP":
        return dt.datetime.fromisoformat(str(value))
    if sql_type == "DATE":
        return dt.date.fromisoformat(str(value))
    if sql_type == "DOUBLE PRECISION":
        return float(value)
    if sql_type == "BOOLEAN":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if sql_type == "BIGINT":
        return int(value)
    return str(value)


# The row cap the parity cases run under: MetricFlow's longest answers (a row per day of its 14,976-day
# spine) compared whole, as a user wanting whole results sets it (ConnectionOptions.row_cap)
ROW_CAP = 20_000


def cases() -> list[dict[str, Any]]:
    """Every parity case (``fixtures/metricflow/cases.yaml``) with MetricFlow's recorded answer (the rows of
    answers over 2,000 rows kept apart, compressed: ``oracle/<project>.long.json.gz``). A fresh copy of
    what was read once per process."""
    return list(copy.deepcopy(_cases()))


@functools.cache
def _cases() -> tuple[dict[str, Any], ...]:
    data = yaml.load((FIXTURES / "cases.yaml").read_text(), Loader=db_templates.YAML_LOADER)
    out = []
    for project, listed in data.items():
        oracle = {r["id"]: r for r in json.loads((FIXTURES / "oracle" / f"{project}.json").read_text())}
        long = FIXTURES / "oracle" / f"{project}.long.json.gz"
        for key, kept in (json.loads(gzip.decompress(long.read_bytes())) if long.exists() else {}).items():
            oracle[key] = {**oracle[key], **kept}
        for case in listed:
            out.append({**case, "project": project, "oracle": oracle.get(case["id"])})
    return tuple(out)


# --- comparing rows as MetricFlow's -------------------------------------------------------------

def normal(value: Any) -> Any:
    """A value as compared: dates (and Baton's period labels) as ISO start dates, numbers as floats."""
    if value is None:
        return None
    if isinstance(value, bool):  # SQLite and MariaDB keep booleans as 0 and 1
        return float(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()[:10]
    if isinstance(value, (int, float)) or type(value).__name__ == "Decimal":
        return float(value)
    text = str(value)
    if len(text) >= 10 and text[4] == "-" and text[7] == "-" and text[:4].isdigit():
        return text[:10]
    if len(text) == 7 and text[4] == "-" and text[:4].isdigit():
        if text[5] == "Q":
            return f"{text[:4]}-{3 * int(text[6]) - 2:02d}-01"
        return f"{text}-01"
    if len(text) == 4 and text.isdigit():
        return f"{text}-01-01"
    return text


def same_rows(ours: list[tuple], theirs: list[list], ordered: bool) -> bool:
    """Equal multisets of rows (numbers within relative 1e-9); order compared only when asked."""
    a = [tuple(normal(v) for v in row) for row in ours]
    b = [tuple(normal(v) for v in row) for row in theirs]
    if len(a) != len(b):
        return False
    if ordered:
        return all(_row_equal(x, y) for x, y in zip(a, b))
    key = lambda row: tuple((v is None, str(type(v)), round(v, 6) if isinstance(v, float) else v) for v in row)
    if Counter(map(key, a)) == Counter(map(key, b)):
        return all(_row_equal(x, y) for x, y in zip(sorted(a, key=key), sorted(b, key=key)))
    return False


def _row_equal(x: tuple, y: tuple) -> bool:
    if len(x) != len(y):
        return False
    for u, v in zip(x, y):
        if isinstance(u, float) and isinstance(v, float):
            if not math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-12):
                return False
        elif u != v:
            return False
    return True


# --- answering a case as Baton ----------------------------------------------------------------

REFUSAL_WORDS = ("does not compute yet", "Baton reads", "not read")


async def outcome(layer, case: dict[str, Any], mode: str) -> tuple[str, str]:
    """How Baton answers a case (``mode``: ``structured`` or ``question``): ``exact``,
    ``refused`` (the reason named), ``asked back``, or ``wrong`` (with why)."""
    from baton.semantic.mf_query import query_from_params
    from baton.semantic.parser import Parsed
    from baton.semantic.query import SemanticQuery, SemanticQueryError

    model = layer.model
    try:
        if mode == "question":
            parsed = (await layer.ready()).parse(case["question"])
            if not isinstance(parsed, Parsed):
                message = getattr(parsed, "message", "not a metric question")
                return ("refused" if any(w in message for w in REFUSAL_WORDS) else "asked back"), message
            query = parsed.query
        elif "saved_query" in case["mf"] and set(case["mf"]) == {"saved_query"}:  # the verified question as it is
            name = case["mf"]["saved_query"]
            saved = next((s for s in model.saved_queries if s.name == name), None)
            if saved is None:
                refusal = model.refusal(name, "saved query")
                return ("refused", refusal.construct) if refusal else ("wrong", f"saved query {name} missing")
            query = SemanticQuery.from_dict(saved.query)
        else:  # a saved query by name with the request's where, order and limit too (mf_query.saved_query_params)
            query = query_from_params(model, case["mf"])
    except SemanticQueryError as exc:
        return ("refused", str(exc)) if any(w in str(exc) for w in REFUSAL_WORDS) else ("asked back", str(exc))
    try:
        compiled, report = await layer.run(query)
    except SemanticQueryError as exc:  # what the compiler refuses: a construct beside one it does not combine with
        return ("refused", str(exc)) if any(w in str(exc) for w in REFUSAL_WORDS) else ("asked back", str(exc))
    if report.result is None:
        return "wrong", f"the query failed: {report.attempt.error}"
    oracle = case["oracle"]
    if report.result.truncated:  # a cap the case runs under (ROW_CAP), not an answer to compare
        return "refused", f"a result longer than the row cap ({len(report.result.rows)} rows kept)"
    if oracle is None or oracle.get("rows") is None:
        return "wrong", "answered, but MetricFlow's rows were not recorded for this case"
    order = _columns(model, compiled, oracle["columns"])
    if order is None:
        return "wrong", f"columns {compiled.columns} do not answer {oracle['columns']}"
    rows = [tuple(row[i] for i in order) for row in report.result.rows]
    if same_rows(rows, oracle["rows"], bool(case.get("ordered"))):
        return "exact", ""
    return "wrong", f"rows differ: ours {rows[:3]}... theirs {oracle['rows'][:3]}..."


def _columns(model, compiled, theirs: list[str]) -> list[int] | None:
    """Where each of MetricFlow's columns is among ours (extra columns shown beside an entity aside)."""
    from baton.semantic.model import TIME

    ours = list(compiled.columns)
    names = [TIME if i < len(compiled.query.by) and compiled.query.by[i] == TIME else c for i, c in enumerate(ours)]
    by = list(compiled.query.by)
    found = []
    for column in (c.lower() for c in theirs):  # MetricFlow keeps an entity's expr's case as its column name
        if column in compiled.query.metrics:
            found.append(ours.index(column, len(by)))
            continue
        if column.startswith("metric_time"):
            target = TIME
        else:
            target = next((d.name for d in model.dimensions  # a multi-hop name ends with the dimension's own
                           if d.name == column or any(column == q or column.endswith(f"__{q}") for q in d.qualified)), None)
        if target not in by:
            return None
        found.append(by.index(target))
    companions = {s for d in by if d != TIME for s in model.dimension(d).shown_with}
    unused = [i for i in range(len(ours)) if i not in found and not (i < len(by) and by[i] in companions)]
    return None if unused or names is None else found
