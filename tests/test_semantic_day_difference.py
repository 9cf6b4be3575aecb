"""A measure's ``DATEDIFF('day', start, end)`` (MetricFlow projects write it: the insurance project's
``avg_time_to_settle_claim``) counted as the warehouses that write it count it, on every engine.

The expected values are DuckDB's own ``DATEDIFF('day', ...)`` over the same rows (the day boundaries
crossed: a TIMESTAMP late one evening to the next morning is one day), never ours.
"""

from __future__ import annotations

import datetime as dt
import uuid

import duckdb
import pytest
import sqlalchemy as sa

from baton.semantic.errors import SemanticModelError
from baton.semantic.layer import SemanticLayer
from baton.semantic.native import model_from_dict
from baton.semantic.query import SemanticQuery
from baton.specialists.sql.connection import SQLConnection

ROWS = [  # (id, kind, opened DATE, closed DATE, seen TIMESTAMP, settled TIMESTAMP)
    (1, "a", dt.date(2020, 1, 1), dt.date(2020, 1, 31), dt.datetime(2020, 1, 1, 23, 0), dt.datetime(2020, 1, 2, 1, 0)),
    (2, "a", dt.date(2020, 2, 28), dt.date(2020, 3, 1), dt.datetime(2020, 2, 28, 1, 0), dt.datetime(2020, 2, 28, 23, 0)),
    (3, "b", dt.date(2021, 12, 31), dt.date(2021, 12, 30), dt.datetime(2021, 12, 31, 12, 0), dt.datetime(2022, 1, 3, 11, 0)),
    (4, "b", dt.date(2022, 5, 5), None, dt.datetime(2022, 5, 5, 0, 0), None),
]
MEASURES = {"days_open": "DATEDIFF('day', opened, closed)", "days_seen": "DATEDIFF('day', seen, settled) + 1"}


def _model() -> dict:
    return {"name": "claims", "entities": [{"name": "claim", "table": "claims"}],
            "measures": [{"name": n, "entity": "claim", "agg": "sum", "expr": e} for n, e in MEASURES.items()],
            "metrics": [{"name": n, "measure": n} for n in MEASURES],
            "dimensions": [{"name": "kind", "entity": "claim", "expr": "kind"}]}


def _duckdb_says() -> dict[str, float]:
    """Each kind's sums as DuckDB itself computes the expressions."""
    con = duckdb.connect()
    con.execute("CREATE TABLE claims (id INT, kind VARCHAR, opened DATE, closed DATE, seen TIMESTAMP, settled TIMESTAMP)")
    con.executemany("INSERT INTO claims VALUES (?, ?, ?, ?, ?, ?)", ROWS)
    rows = con.execute(f"SELECT kind, SUM({MEASURES['days_open']}), SUM({MEASURES['days_seen']}) FROM claims GROUP BY kind").fetchall()
    return {kind: (float(a), float(b)) for kind, a, b in rows}


def _fill(url: str) -> None:
    engine = sa.create_engine(url)
    timestamp = "DATETIME" if engine.dialect.name in ("mysql", "mariadb") else "TIMESTAMP"
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE IF EXISTS claims")
        conn.exec_driver_sql(f"CREATE TABLE claims (id INT, kind VARCHAR(8), opened DATE, closed DATE, seen {timestamp}, settled {timestamp})")
        conn.execute(sa.text("INSERT INTO claims VALUES (:i, :k, :o, :c, :s, :t)"),
                     [dict(zip("ikocst", row)) for row in ROWS])
    engine.dispose()


async def _answer(url: str) -> dict[str, tuple[float, float]]:
    _fill(url)
    layer = SemanticLayer(model_from_dict(_model()), SQLConnection(url, id="claims", allow_privileged_role=True))
    try:
        compiled, report = await layer.run(SemanticQuery(metrics=tuple(MEASURES), by=("kind",)))
    finally:
        await layer.connection.aclose()
    assert report.result is not None, (compiled.sql, report.attempt.error)
    return {kind: (float(a), float(b)) for kind, a, b in report.result.rows}


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
async def test_a_day_difference_is_counted_as_duckdb_counts_it_on_file_engines(kind, tmp_path):
    assert await _answer(f"{kind}:///{tmp_path / f'claims.{kind}'}") == _duckdb_says()


async def test_a_day_difference_is_counted_as_duckdb_counts_it_on_postgres(state_db):
    assert await _answer(state_db) == _duckdb_says()


async def test_a_day_difference_is_counted_as_duckdb_counts_it_on_mysql(mysql_url):
    admin = sa.create_engine(mysql_url, isolation_level="AUTOCOMMIT")
    name = f"baton_days_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    try:
        url = sa.make_url(mysql_url).set(database=name).render_as_string(hide_password=False)
        assert await _answer(url) == _duckdb_says()
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()


@pytest.mark.parametrize("expr", ["DATEDIFF(opened, closed)", "DATEDIFF('month', opened, closed)",
                                  "DATEDIFF('day', opened, pg_read_file('/etc/passwd'))", "DATEDIFF('day', opened)"])
def test_other_date_differences_are_refused_when_the_model_loads(expr):
    model = _model()
    model["measures"][0]["expr"] = expr
    with pytest.raises(SemanticModelError):
        model_from_dict(model)
