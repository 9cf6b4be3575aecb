"""Pre-validation on the TPC-H and TPC-DS queries (sqlglot's fixtures, fetched by
``scripts/fetch_test_data.py``), against a schema read from the header rows of the sample
tables that ship with them:

- no issue for any TPC-H query, in any dialect, and each of them runs on DuckDB over the
  sample data (so "no issue" is right);
- exactly one issue over all 99 TPC-DS queries: query 30 uses ``c_last_review_date``, a
  column the TPC-DS ``customer`` table does not have (it has ``c_last_review_date_sk``), and
  DuckDB's binder rejects it too.
"""

from __future__ import annotations

import duckdb
import pytest

from baton.specialists.sql.prevalidate import prevalidate
from baton.specialists.sql.schema import ColumnInfo, SchemaInfo, TableInfo
from sql_corpora import DIALECTS, corpora, needs_corpora, quiet_sqlglot  # noqa: F401 (autouse fixture)

pytestmark = needs_corpora



def _schema(benchmark: str, dialect: str) -> SchemaInfo:
    schema = SchemaInfo(dialect)
    for table, columns in corpora.table_columns(benchmark).items():
        schema.add(TableInfo(table, [ColumnInfo(c) for c in columns]))
    return schema


def _load(connection, benchmark: str, tables=None) -> None:
    for path in sorted((corpora.TARGET / "optimizer" / benchmark).glob("*.csv.gz")):
        table = path.name.removesuffix(".csv.gz")
        if tables is None or table in tables:
            connection.execute(f"CREATE TABLE {table} AS SELECT * FROM read_csv(?, delim='|', header=true)",
                               [str(path)])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_tpch_queries_have_no_issue(dialect):
    schema = _schema("tpc-h", dialect)
    assert len(schema.tables) == 8
    found = {}
    for name, original, optimized in corpora.tpch_queries():
        # sqlglot's rewrites quote names with "..." which MySQL reads as strings.
        for sql in (original, optimized) if dialect != "mysql" else (original,):
            if issues := prevalidate(sql, schema, dialect):
                found[name] = issues
    assert found == {}


def test_tpch_queries_that_pass_run_on_duckdb():
    connection = duckdb.connect()
    _load(connection, "tpc-h")
    schema = _schema("tpc-h", "duckdb")
    for name, original, _ in corpora.tpch_queries():
        assert prevalidate(original, schema, "duckdb") == [], name
        connection.execute(original).fetchall()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_tpcds_has_exactly_the_one_real_wrong_column(dialect):
    schema = _schema("tpc-ds", dialect)
    found = {}
    for name, original, optimized in corpora.tpcds_queries():
        for sql in (original, optimized) if dialect != "mysql" else (original,):
            for issue in prevalidate(sql, schema, dialect):
                found.setdefault(name, set()).add((issue.kind, issue.name, issue.suggestions[0]))
    assert found == {"TPC-DS 30": {("unknown_column", "c_last_review_date", "c_last_review_date_sk")}}


def test_tpcds_query_30_is_rejected_by_duckdb_for_the_same_column():
    connection = duckdb.connect()
    _load(connection, "tpc-ds", {"web_returns", "date_dim", "customer_address", "customer"})
    query_30 = next(original for name, original, _ in corpora.tpcds_queries() if name == "TPC-DS 30")
    with pytest.raises(duckdb.BinderException, match="c_last_review_date"):
        connection.execute(query_30)
