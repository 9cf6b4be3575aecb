"""MetricFlow's own integration cases (``fixtures/metricflow_itest``) asked of Baton (issue 27).

Shared by ``bench/metricflow_itest.py`` (all 266, DuckDB and PostgreSQL) and
``tests/test_metricflow_itest.py`` (a fast subset on DuckDB). A case's ``check_query`` is
rendered with the Jinja helpers MetricFlow's test harness passes it, written here per engine
(what they render is a fact of the harness: a time range as two casts to TIMESTAMP, a
``DATE_TRUNC``, an ``EXTRACT`` of the ISO day of week, ``PERCENTILE_CONT ... WITHIN GROUP``);
its rows are the expected answer. The case itself becomes MetricFlow's structured query
(``mf_query.query_from_params``): what Baton does not read is a refusal naming the construct.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import gzip
import math
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

import db_templates

FIXTURES = Path(__file__).parent / "fixtures" / "metricflow_itest"
_MANIFESTS = {"SIMPLE_MODEL": "simple_manifest", "SIMPLE_MODEL_NON_DS": "non_sm_manifest",
              "EXTENDED_DATE_MODEL": "extended_date_manifest", "SCD_MODEL": "scd_manifest",
              "UNPARTITIONED_MULTI_HOP_JOIN_MODEL": "multi_hop_join_manifest",
              "PARTITIONED_MULTI_HOP_JOIN_MODEL": "partitioned_multi_hop_join_manifest"}
MODELS = {key: FIXTURES / "manifests" / folder for key, folder in _MANIFESTS.items()}
# The row cap the cases run under, as a user wanting whole results sets it (ConnectionOptions.row_cap):
# the longest check query (metric_time_with_other_dimensions: each spine day by the listings' and users'
# values) has 59,908 rows, compared whole; a capped answer is counted as refused.
ROW_CAP = 100_000
_TYPES = {"TIME": "TIMESTAMP", "DATE": "DATE", "STRING": "VARCHAR(255)", "FLOAT": "DOUBLE PRECISION", "BOOLEAN": "BOOLEAN",
          "INT": "BIGINT"}
_CASE_KEYS = {"name", "description", "model", "check_query", "metrics", "group_bys", "group_by_objs", "where_filter",
              "time_constraint", "order_bys", "limit", "check_order", "allow_empty", "min_max_only", "apply_group_by",
              "saved_query_name", "required_features"}


def all_cases() -> list[dict[str, Any]]:
    """Every case, in file order, with its file's name (a fresh copy: a caller may change its own)."""
    return list(copy.deepcopy(_parsed_cases()))


@functools.cache
def _parsed_cases() -> tuple[dict[str, Any], ...]:
    """The case files parsed once per process (a second a parse; many tests and parametrizations ask)."""
    out = []
    for path in sorted((FIXTURES / "cases").glob("itest_*.yaml")):
        for document in yaml.load_all(path.read_text(), Loader=db_templates.YAML_LOADER):
            if document:
                case = document["integration_test"]
                assert set(case) <= _CASE_KEYS, set(case) - _CASE_KEYS
                out.append({**case, "file": path.name})
    return tuple(out)


# --- the tables -----------------------------------------------------------------------------------

@functools.cache
def _snapshots() -> tuple[dict[str, Any], ...]:
    """Every table snapshot, parsed once per process (31 files: seconds of YAML, read by many tests)."""
    out = []
    for path in sorted((FIXTURES / "tables").rglob("*.yaml*")):
        text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
        out.append(yaml.load(text, Loader=db_templates.YAML_LOADER)["table_snapshot"])
    return tuple(out)


def _typed(value: Any, sql_type: str) -> Any:
    if value is None or value == "None":
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


def duckdb_copies(folder: Path) -> tuple[str, str]:
    """The snapshots in a DuckDB file in ``folder``, and a copy of it for the check queries: the
    URLs (Baton's connection, the checker's). Each a copy of one file filled once per process."""
    return (db_templates.copy_of("itest", load_tables, folder / "itest.duckdb"),
            db_templates.copy_of("itest", load_tables, folder / "check.duckdb"))


def sqlite_copy(folder: Path) -> str:
    """The URL of a SQLite file in ``folder`` holding the snapshots: a copy of one filled once per process."""
    return db_templates.copy_of("itest", load_tables, folder / "itest.sqlite", "sqlite")


def load_tables(engine) -> None:
    """Create and fill every snapshot table (the time spines too) through a SQLAlchemy engine."""
    import sqlalchemy as sa

    quote = engine.dialect.identifier_preparer.quote
    with engine.begin() as conn:
        for snapshot in _snapshots():
            table = snapshot["table_name"]
            columns = {c["name"]: _TYPES[c["type"]] for c in snapshot["column_definitions"]}
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {quote(table)}"))
            conn.execute(sa.text(f"CREATE TABLE {quote(table)} ({', '.join(f'{quote(c)} {t}' for c, t in columns.items())})"))
            names = list(columns)
            rows = [{f"p{i}": _typed(v, columns[n]) for i, (n, v) in enumerate(zip(names, row))} for row in snapshot["rows"]]
            if rows:
                marks = ", ".join(f":p{i}" for i in range(len(names)))
                conn.execute(sa.text(f"INSERT INTO {quote(table)} VALUES ({marks})"), rows)


# --- the check query's Jinja helpers, per engine ------------------------------------------------------

class _Names:
    """``TimeGranularity.DAY`` / ``DatePart.DOW`` as the harness passes them: their lower-case value."""

    def __init__(self, *names: str) -> None:
        for name in names:
            setattr(self, name.upper(), name)


_GRANULARITY = _Names("nanosecond", "microsecond", "millisecond", "second", "minute", "hour", "day", "week", "month",
                      "quarter", "year")
_DATE_PART = _Names("year", "quarter", "month", "day", "dow", "doy")
_EXTRACT = {"dow": "isodow", "doy": "doy"}


def helpers(engine: str, schema: str) -> dict[str, Any]:
    """The names a ``check_query`` (and a ``where_filter``) is rendered with, for ``engine``."""
    ts = "TIMESTAMP"

    def cast_to_ts(text: str) -> str:
        return f"CAST('{text}' AS {ts})"

    def render_time_constraint(expr: str, start_time: str | None = None, stop_time: str | None = None) -> str:
        parts = []
        if start_time:
            parts.append(f"CAST({expr} AS {ts}) >= {cast_to_ts(start_time)}")
        if stop_time:
            if len(stop_time) == 10:
                stop = (dt.date.fromisoformat(stop_time) + dt.timedelta(days=1)).isoformat()
            else:
                stop = (dt.datetime.fromisoformat(stop_time) + dt.timedelta(seconds=1)).isoformat(sep=" ")
            parts.append(f"CAST({expr} AS {ts}) < {cast_to_ts(stop)}")
        return " AND ".join(parts)

    def _interval(count: Any, granularity: str) -> tuple[str, str]:
        return (f"({count}) * 3", "month") if granularity == "quarter" else (str(count), granularity)

    def render_date_sub(table_alias: str, column_alias: str, count: int, granularity: str) -> str:
        n, unit = _interval(count, granularity)
        return f"{table_alias}.{column_alias} - {n} * INTERVAL '1 {unit}'"

    def render_date_add(date_column: str, count_column: str, granularity: str) -> str:
        n, unit = _interval(count_column, granularity)
        return f"{date_column} + {n} * INTERVAL '1 {unit}'"

    def render_date_trunc(expr: str, granularity: str) -> str:
        return f"DATE_TRUNC('{granularity}', CAST({expr} AS {ts}))"

    def render_extract(expr: str, date_part: str) -> str:
        return f"EXTRACT({_EXTRACT.get(date_part, date_part)} FROM CAST({expr} AS {ts}))"

    def render_percentile_expr(expr: str, percentile: float, use_discrete_percentile: bool,
                               use_approximate_percentile: bool) -> str:
        if use_approximate_percentile:
            if engine != "duckdb" or use_discrete_percentile:
                raise _EngineLacks("an approximate percentile")
            return f"APPROX_QUANTILE({expr}, {percentile})"
        function = "PERCENTILE_DISC" if use_discrete_percentile else "PERCENTILE_CONT"
        return f"{function}({percentile}) WITHIN GROUP (ORDER BY ({expr}))"

    def _path(entity_path) -> str:
        return f", entity_path={list(entity_path)!r}" if entity_path else ""

    return {
        "source_schema": schema, "TimeGranularity": _GRANULARITY, "DatePart": _DATE_PART,
        "render_time_constraint": render_time_constraint, "render_date_sub": render_date_sub,
        "render_date_add": render_date_add, "render_date_trunc": render_date_trunc, "render_extract": render_extract,
        "render_percentile_expr": render_percentile_expr, "mf_time_spine_source": f"{schema}.mf_time_spine",
        "double_data_type_name": "DOUBLE" if engine == "duckdb" else "DOUBLE PRECISION",
        "generate_random_uuid": lambda: "gen_random_uuid()", "cast_to_ts": cast_to_ts,
        "render_dimension_template": lambda name, entity_path=(): f"{{{{ Dimension('{name}'{_path(entity_path)}) }}}}",
        "render_entity_template": lambda name, entity_path=(): f"{{{{ Entity('{name}'{_path(entity_path)}) }}}}",
        "render_metric_template": lambda name, group_by=(): f"{{{{ Metric('{name}', group_by={list(group_by)!r}) }}}}",
        "render_time_dimension_template": lambda name, time_granularity=None, entity_path=():
            f"{{{{ TimeDimension('{name}'{f', {time_granularity!r}' if time_granularity else ''}{_path(entity_path)}) }}}}",
    }


class _EngineLacks(Exception):
    """The check query needs a function this engine does not have (MetricFlow skips such a case too)."""


def render(text: str, engine: str, schema: str) -> str:
    import jinja2

    return jinja2.Template(text, undefined=jinja2.StrictUndefined).render(**helpers(engine, schema))


# --- comparing rows -------------------------------------------------------------------------------

def normal(value: Any) -> Any:
    """A value as compared: numbers as floats; dates and timestamps as ISO text, a midnight
    timestamp as its date (a DATE and a TIMESTAMP of the same day are the same answer)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, dt.datetime):
        value = value.replace(tzinfo=None)
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, (int, float)) or type(value).__name__ == "Decimal":
        return float(value)
    text = str(value)
    if len(text) == 7 and text[4] == "-" and text[:4].isdigit():  # Baton's period labels
        return f"{text[:4]}-{3 * int(text[6]) - 2:02d}-01" if text[5] == "Q" else f"{text}-01"
    if len(text) == 4 and text.isdigit():
        return f"{text}-01-01"
    if len(text) == 10 and text[4] == "-" and text[7] == "-":
        return text
    if 19 <= len(text) <= 26 and text[4] == "-" and text[10] == " " and text[13] == ":":  # Baton's sub-daily periods
        try:
            return normal(dt.datetime.fromisoformat(text))
        except ValueError:
            return text
    return text


def _key(row: tuple) -> tuple:
    return tuple((v is None, str(type(v)), round(v, 6) if isinstance(v, float) else v) for v in row)


def _equal(x: tuple, y: tuple) -> bool:
    for u, v in zip(x, y):
        if isinstance(u, float) and isinstance(v, float):
            if not math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9):
                return False
        elif u != v:
            return False
    return len(x) == len(y)


def same_rows(ours: list[tuple], theirs: list[tuple], ordered: bool) -> bool:
    """Equal multisets of rows (numbers within relative 1e-9, NULL equal to NULL); order only when asked."""
    a = [tuple(normal(v) for v in row) for row in ours]
    b = [tuple(normal(v) for v in row) for row in theirs]
    if len(a) != len(b):
        return False
    if ordered:
        return all(_equal(x, y) for x, y in zip(a, b))
    if Counter(map(_key, a)) != Counter(map(_key, b)):
        return False
    return all(_equal(x, y) for x, y in zip(sorted(a, key=_key), sorted(b, key=_key)))


# --- a case as MetricFlow's structured query ----------------------------------------------------------

_UNREAD = {"apply_group_by": "apply_group_by: false (rows not grouped)"}


def _element(spec: dict[str, Any]) -> str:
    """One ``group_by_objs`` entry as MetricFlow's call syntax (which ``mf_query`` reads)."""
    name, grain, part = spec["name"], spec.get("grain"), spec.get("date_part")
    path = f", entity_path={list(spec['entity_path'])!r}" if spec.get("entity_path") else ""
    if grain or part:
        return (f"TimeDimension({name!r}{f', {grain!r}' if grain else ''}{path}"
                f"{f', date_part_name={part!r}' if part else ''})")
    return f"Dimension({name!r}{path})"


def params_of(case: dict[str, Any], engine: str, schema: str) -> dict[str, Any]:
    """The MetricFlow query a case asks, in ``mf query``'s form (``time_constraint`` aside)."""
    for key, construct in _UNREAD.items():
        if key in case and case[key] not in (False, None) and not (key == "apply_group_by" and case[key] is True):
            raise _Unread(construct)
    params: dict[str, Any] = {"metrics": list(case.get("metrics") or ())}
    params["group_by"] = [*(case.get("group_bys") or ()), *(_element(s) for s in case.get("group_by_objs") or ())]
    if case.get("saved_query_name"):  # the saved query's, with the case's where, order and limit (mf_query)
        params["saved_query"] = case["saved_query_name"]
    params["where"] = [render(case["where_filter"], engine, schema)] if case.get("where_filter") else []
    params["order_by"] = list(case.get("order_bys") or ())
    if case.get("limit") is not None:
        params["limit"] = case["limit"]
    if case.get("min_max_only"):
        params["min_max_only"] = True
    return params


class _Unread(Exception):
    """A case option Baton's query does not have (named)."""


_STEPS = {"hour": dt.timedelta(hours=1), "minute": dt.timedelta(minutes=1), "second": dt.timedelta(seconds=1)}
_CUTS: dict[str, dict[str, int]] = {"hour": {"minute": 0, "second": 0}, "minute": {"second": 0}, "second": {}}


def _time_constraint(bounds: list[str], grain: str) -> str:
    """MetricFlow's ``time_constraint`` [start, end] (end inclusive) as a filter on metric time: the
    range widened to whole periods of the query's metric time grain, as MetricFlow does (a sub-daily
    grain: the times from the start of the first bound's period to the end of the last's)."""
    if grain in _STEPS:
        first = dt.datetime.fromisoformat(bounds[0])
        start = first.replace(microsecond=0, **_CUTS[grain])
        stop = dt.datetime.fromisoformat(bounds[1]).replace(microsecond=0, **_CUTS[grain]) + _STEPS[grain]
        call = f"{{{{ TimeDimension('metric_time', '{grain}') }}}}"
        return f"{call} >= '{start.isoformat(sep=' ')}' AND {call} < '{stop.isoformat(sep=' ')}'"
    if any(len(b) != 10 for b in bounds):
        raise _Unread("a time constraint with a time of day")
    start, end = dt.date.fromisoformat(bounds[0]), dt.date.fromisoformat(bounds[1])
    if grain == "week":
        start -= dt.timedelta(days=start.weekday())
        end += dt.timedelta(days=6 - end.weekday())
    elif grain in ("month", "quarter", "year"):
        first = {"month": end.month, "quarter": 3 * ((end.month - 1) // 3) + 1, "year": 1}[grain]
        span = {"month": 1, "quarter": 3, "year": 12}[grain]
        start = start.replace(day=1, month=start.month if grain == "month" else
                              (3 * ((start.month - 1) // 3) + 1 if grain == "quarter" else 1))
        months = end.year * 12 + first - 1 + span
        end = dt.date(months // 12, months % 12 + 1, 1) - dt.timedelta(days=1)
    elif grain != "day":
        raise _Unread(f"a time constraint with metric time by {grain}")
    stop = end + dt.timedelta(days=1)
    call = "{{ TimeDimension('metric_time', 'day') }}"
    return f"{call} >= '{start.isoformat()}' AND {call} < '{stop.isoformat()}'"


async def ask(layer, case: dict[str, Any], engine: str, check) -> tuple[str, str]:
    """``passed``, ``refused`` (the construct), ``wrong`` or ``errored`` (with why) for one case;
    ``check``: a SQLAlchemy engine on the same database, for the check query."""
    import sqlalchemy as sa

    from baton.semantic.errors import SemanticModelError
    from baton.semantic.mf_query import query_from_params
    from baton.semantic.query import measures_of_metrics

    schema = "main" if engine == "duckdb" else "public"
    try:
        params = params_of(case, engine, schema)
        query = query_from_params(layer.model, params)
        if case.get("time_constraint"):  # widened to the query's grain: the finest its metrics have, unless named
            grain = query.grain or next((t.grain for t in query.times if t.dimension == "time" and t.grain in _STEPS),
                                        None) or layer.model.finest_grain(measures_of_metrics(layer.model, query.metrics)) or "day"
            params["where"].append(_time_constraint(case["time_constraint"], grain))
            query = query_from_params(layer.model, params)
    except _Unread as exc:
        return "refused", str(exc)
    except SemanticModelError as exc:
        return "refused", construct_of(str(exc))
    try:
        sql = render(case["check_query"], engine, schema)
    except _EngineLacks as exc:
        return "refused", f"{exc} on {engine} (MetricFlow skips it too)"
    try:
        with check.connect() as conn:
            result = conn.execute(sa.text(sql.replace(":", r"\:")))
            columns = [c.lower() for c in result.keys()]
            expected = [tuple(row) for row in result]
    except Exception as exc:
        return "errored", f"check query: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    try:
        compiled, report = await layer.run(query)
    except SemanticModelError as exc:  # what the compiler refuses (a construct beside others it does not combine)
        return "refused", construct_of(str(exc))
    if report.result is None:
        return "errored", f"Baton's query failed: {report.attempt.error}"
    order = _columns(layer.model, compiled, columns)
    if order is None:
        return "wrong", f"columns {compiled.columns} do not answer {columns}"
    rows = [tuple(row[i] for i in order) for row in report.result.rows]
    if report.result.truncated:  # capped, and the answer says so: its rows must all be MetricFlow's
        if not _within(rows, expected):
            return "wrong", f"capped at {len(rows)} rows, and some are not MetricFlow's"
        return "refused", "a result longer than the row cap (its first rows given, said to be capped; each checked)"
    if same_rows(rows, expected, bool(case.get("check_order"))):
        return "passed", ""
    return "wrong", f"rows differ: ours {sorted(map(str, rows))[:3]}... theirs {sorted(map(str, expected))[:3]}..."


def _within(ours: list[tuple], theirs: list[tuple]) -> bool:
    """Every row of ours among theirs (a multiset), numbers rounded as ``same_rows`` keys them."""
    left = Counter(_key(tuple(normal(v) for v in row)) for row in theirs)
    for row in ours:
        key = _key(tuple(normal(v) for v in row))
        if left[key] <= 0:
            return False
        left[key] -= 1
    return True


def construct_of(message: str) -> str:
    """A refusal's message as the construct it names (refusals of one construct rank together)."""
    if "which Baton does not compute yet" in message and " uses " in message:
        return message.split(" uses ", 1)[1].split(", which Baton")[0]
    return message


def _columns(model, compiled, theirs: list[str]) -> list[int] | None:
    """Where each check-query column is among Baton's (an entity's shown companions aside), or None."""
    from dataclasses import replace

    from baton.semantic.model import TIME

    ours = list(compiled.columns)
    by = list(compiled.query.by)
    if compiled.query.min_max:  # x__min, x__max: each by its suffix, the dimension as below
        found = _columns(model, replace(compiled, columns=tuple(compiled.columns[0].rsplit("__", 1)[:1]),
                                           query=replace(compiled.query, min_max=False)),
                         [c.rsplit("__", 1)[0] for c in theirs[:1]])
        return None if found != [0] or [c.rsplit("__", 1)[1] for c in theirs] != ["min", "max"] else [0, 1]
    found = []
    for column in theirs:
        if column in compiled.query.metrics:
            found.append(ours.index(column, len(by)))
            continue
        group = next((i for i, b in enumerate(by) if compiled.query.time_group(b) is not None and i not in found
                      and (column == b or column.endswith(f"__{b}"))), None)  # listing__user__ds__day: user__ds__day
        if group is not None:
            found.append(group)
            continue
        if column.startswith("metric_time") or column.split("__")[-1] in ("day", "week", "month", "quarter", "year"):
            target = TIME
        else:
            target = next((d.name for d in model.dimensions
                           if d.name == column or any(column == q or column.endswith(f"__{q}") for q in d.qualified)), None)
        if target not in by or by.index(target) in found:
            return None
        found.append(by.index(target))
    companions = {s for d in by if d != TIME and compiled.query.time_group(d) is None for s in model.dimension(d).shown_with}
    unused = [i for i in range(len(ours)) if i not in found and not (i < len(by) and by[i] in companions)]
    return None if unused else found


def outcomes(url: str, check_url: str, cases: list[dict[str, Any]], engine: str = "duckdb") -> list[tuple[str, str, str]]:
    """(name, kind, detail) of each case asked of Baton over ``url`` (each with its own model), the expected rows from
    its check query on ``check_url``: what the focused test modules assert, in one place."""
    import asyncio

    import sqlalchemy as sa

    from baton.semantic.layer import SemanticLayer
    from baton.semantic.metricflow import load_metricflow
    from baton.specialists.sql.connection import SQLConnection

    async def run() -> list[tuple[str, str, str]]:
        connection = SQLConnection(url, id="itest", allow_privileged_role=True, row_cap=ROW_CAP)
        layers = {name: SemanticLayer(load_metricflow(MODELS[name]), connection) for name in {c["model"] for c in cases}}
        check = sa.create_engine(check_url)
        try:
            return [(case["name"], *await ask(layers[case["model"]], case, engine, check)) for case in cases]
        finally:
            await connection.aclose()
            check.dispose()

    return asyncio.run(run())
