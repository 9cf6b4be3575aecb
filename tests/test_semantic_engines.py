"""The demo's semantic model compiled for SQLite, DuckDB, PostgreSQL and MariaDB: identical results.

The demo database is copied to each engine (text dates stay text, as in the demo; the
servers' copies are read by a least-privilege role, ``sql_test_databases``). Every metric
question of the semantic question set is parsed once (on SQLite) and its semantic query
compiled and run on each engine through the layer's validation pass (safety check with the
connection's relation policy, the engine guard); the rows must equal SQLite's, in order
(the compiler orders ties by every dimension, so the order is the same everywhere).
The MetricFlow file gives the same answers as the native YAML.
"""

from __future__ import annotations

import contextlib
import sqlite3

import pytest
import sqlalchemy as sa

from baton.demo.data import build_demo_database
from baton.semantic.layer import SemanticLayer
from baton.semantic.loading import demo_model_path, load_model
from baton.semantic.parser import AskBack, Parsed
from baton.semantic.totals import TOTAL_ROWS, totals_query
from baton.specialists.sql.connection import SQLConnection
from semantic_gold import load_cases, rows_match
from sql_test_databases import make_db  # noqa: F401  (fixture)

TABLES = {
    "business_units": "id INTEGER PRIMARY KEY, name VARCHAR(100) NOT NULL, description VARCHAR(200)",
    "products": "id INTEGER PRIMARY KEY, unit_id INTEGER NOT NULL, name VARCHAR(100) NOT NULL, category VARCHAR(50) NOT NULL",
    "monthly_revenue": "month VARCHAR(7) NOT NULL, unit_id INTEGER NOT NULL, product_id INTEGER NOT NULL, revenue_cents BIGINT NOT NULL",
    "monthly_costs": "month VARCHAR(7) NOT NULL, unit_id INTEGER NOT NULL, category VARCHAR(50) NOT NULL, amount {double} NOT NULL",
    "roadshow_events": "id INTEGER PRIMARY KEY, city VARCHAR(50) NOT NULL, event_date VARCHAR(10) NOT NULL, tickets_sold INTEGER NOT NULL, "
                       "ticket_price {double} NOT NULL, venue_cost {double} NOT NULL, deleted_at VARCHAR(30)",
    "sales_transactions": "id INTEGER PRIMARY KEY, unit_id INTEGER NOT NULL, product_id INTEGER NOT NULL, sold_at VARCHAR(19) NOT NULL, "
                          "quantity INTEGER NOT NULL, amount_cents BIGINT NOT NULL",
}
DOUBLE = {"duckdb": "DOUBLE", "postgres": "DOUBLE PRECISION", "mysql": "DOUBLE"}
SALES_ROWS = 3000


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory):
    return build_demo_database(tmp_path_factory.mktemp("semantic_demo") / "finance.sqlite", sales_rows=SALES_ROWS)


def _copy(db, source) -> None:
    engine = db.admin()
    with contextlib.closing(sqlite3.connect(source)) as src, engine.begin() as c:
        for table, columns in TABLES.items():
            c.exec_driver_sql(f"CREATE TABLE {table} ({columns.format(double=DOUBLE[db.kind])})")
            rows = src.execute(f"SELECT * FROM {table}").fetchall()
            names = [d[0] for d in src.execute(f"SELECT * FROM {table} LIMIT 0").description]
            marks = ", ".join(f":{n}" for n in names)
            c.execute(sa.text(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})"), [dict(zip(names, r)) for r in rows])
    engine.dispose()


async def _queries(layer):
    parser = await layer.ready()
    cases = load_cases()
    out = []
    for case in cases["answer"]:
        outcome = parser.parse(case["q"])
        if isinstance(outcome, Parsed):
            out.append((case["q"], outcome.query))
    assert len(out) >= 60
    return out


@pytest.mark.parametrize("kind", ["duckdb", "postgres", "mysql"])
async def test_every_metric_query_gives_the_same_rows_on_each_engine(make_db, kind, demo_file):
    model = load_model(demo_model_path())
    reference = SemanticLayer(model, SQLConnection(f"sqlite:///{demo_file}", id="reference"))
    db = make_db(kind)
    _copy(db, demo_file)
    layer = SemanticLayer(model, db.connection())
    try:
        queries = await _queries(reference)
        await layer.ready()
        assert layer.values["business_unit"].keys() == reference.values["business_unit"].keys()
        assert layer.years == reference.years == (2024, 2025)
        for question, query in queries:
            expected, base = await reference.run(query)
            compiled, report = await layer.run(query)
            assert report.unsafe is None and report.result is not None, (question, compiled.sql, report.attempt.error)
            assert compiled.dialect == layer.dialect
            assert rows_match(report.result.rows, base.result.rows, ordered=True), (question, compiled.sql,
                                                                                   report.result.rows[:5], base.result.rows[:5])
            assert list(report.result.columns) == list(base.result.columns)
            if not report.result.truncated:  # the totals a top N's shares are of, summed by this engine
                metrics = list(compiled.query.metrics)
                totals = await layer.run_sql(totals_query(compiled, metrics), "totals")
                assert totals.unsafe is None and totals.result is not None, (question, totals.attempt.error)
                row = dict(zip(totals.result.columns, totals.result.rows[0], strict=True))
                assert row[TOTAL_ROWS] == report.result.row_count
                for metric in metrics:
                    index = list(report.result.columns).index(metric)
                    expected_sum = sum(float(r[index] or 0) for r in report.result.rows)
                    assert float(row[metric] or 0) == pytest.approx(expected_sum, rel=1e-9, abs=1e-6), (question, metric)
    finally:
        await reference.connection.aclose()


async def test_the_metricflow_file_gives_the_same_answers_as_the_native_yaml(demo_file):
    connection = SQLConnection(f"sqlite:///{demo_file}", id="demo")
    native = SemanticLayer(load_model(demo_model_path()), connection)
    metricflow = SemanticLayer(load_model(demo_model_path().with_name("metricflow.yaml")), connection)
    try:
        a, b = await native.ready(), await metricflow.ready()
        cases = load_cases()
        answered = 0
        for question in [c["q"] for c in cases["answer"]] + cases["ask_back"]:
            mine, theirs = a.parse(question), b.parse(question)
            assert type(mine) is type(theirs), question
            if isinstance(mine, Parsed):
                assert mine.query == theirs.query, question
                (_, x), (_, y) = await native.run(mine.query), await metricflow.run(theirs.query)
                assert x.result is not None and rows_match(x.result.rows, y.result.rows, ordered=True), question
                answered += 1
            elif isinstance(mine, AskBack):
                assert mine.questions == theirs.questions and mine.reason == theirs.reason, question
        assert answered >= 60
    finally:
        await connection.aclose()


async def test_the_demo_workspace_answers_from_a_metricflow_file(tmp_path):
    from baton.demo.workspace import build_demo_workspace

    build_demo_database(tmp_path / "finance.sqlite", sales_rows=SALES_ROWS)
    async with build_demo_workspace(tmp_path, semantic=demo_model_path().with_name("metricflow.yaml")) as ws:
        answer = await ws.answer("How many tickets were sold in Paris?")
    with contextlib.closing(sqlite3.connect(tmp_path / "finance.sqlite")) as db:
        gold = db.execute("SELECT SUM(tickets_sold) FROM roadshow_events WHERE city = 'Paris' AND deleted_at IS NULL").fetchall()
    assert answer.metadata["fast_path"] == "semantic_layer" and answer.results.rows == [list(gold[0])]
    assert answer.metadata["semantic_query"] == {"metrics": ["tickets"], "where": {"city": ["Paris"]}}
