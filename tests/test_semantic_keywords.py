"""A model may name an entity ``order`` or a column ``date``: the compiled SQL quotes every
identifier that is a keyword, on every engine (sqlglot leaves ``AS order`` bare on SQLite and
PostgreSQL, which refuse it)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from sqlglot import exp
from typer.testing import CliRunner

from baton.cli import build_app
from baton.semantic.expressions import render_sql

MODEL = """name: kw
entities:
  - name: order
    table: order
    time: {column: date, format: date}
measures:
  - {name: revenue_amount, entity: order, agg: sum, expr: amount}
metrics:
  - {name: revenue, measure: revenue_amount}
dimensions:
  - {name: group, entity: order, expr: region}
"""


@pytest.mark.parametrize("dialect", ["sqlite", "postgres", "duckdb", "mysql"])
def test_keywords_are_quoted_and_other_names_left_alone(dialect):
    tree = exp.select(exp.column("amount", table="order"), exp.column("date", table="order")).from_(
        exp.alias_(exp.to_table("order"), "order", table=True))
    sql = render_sql(tree, dialect)
    quote = "`" if dialect == "mysql" else '"'
    assert f"{quote}order{quote}" in sql and f"{quote}date{quote}" in sql
    assert f"{quote}amount{quote}" not in sql  # not a keyword: as written
    assert tree.sql(dialect=dialect) != sql or dialect in ("duckdb", "mysql")  # the tree itself is untouched


def test_a_model_with_keyword_names_checks_and_answers_on_sqlite(tmp_path, monkeypatch):
    with sqlite3.connect(tmp_path / "shop.sqlite") as db:
        db.execute('CREATE TABLE "order" (id INTEGER PRIMARY KEY, date TEXT, region TEXT, amount INTEGER)')
        db.executemany('INSERT INTO "order" VALUES (?, ?, ?, ?)', [(1, "2025-01-14", "north", 12), (2, "2025-02-03", "south", 34)])
    (tmp_path / "kw.yaml").write_text(MODEL)
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_MODEL", raising=False)
    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    checked = CliRunner().invoke(build_app(), ["semantic", "check", str(tmp_path / "kw.yaml"), "--database", url])
    assert checked.exit_code == 0, checked.output
    asked = CliRunner().invoke(build_app(), ["ask", "--json", "--database", url, "--semantic", str(tmp_path / "kw.yaml"),
                                             "Revenue by group in 2025"])
    assert asked.exit_code == 0, asked.output
    assert '"south"' in asked.stdout and "34" in asked.stdout


ORDERS_MODEL = """name: shop
entities:
  - name: sale
    table: orders
    time: {column: ordered_on, format: date}
measures:
  - {name: order_count, entity: sale, agg: count, expr: "1"}
metrics:
  - {name: orders, measure: order_count, decimals: 0}
  - {name: total, measure: order_count, synonyms: [count]}
dimensions:
  - {name: region, entity: sale, expr: region}
"""


def test_a_metric_named_like_a_filler_word_is_still_recognised(tmp_path, monkeypatch):
    """``order`` is a filler word (``ordered by``) and filler synonyms are ignored, but a metric
    *named* ``orders`` is meant: "How many orders in 2025?" is answered."""
    from baton.semantic.lexicon import Lexicon
    from baton.semantic.loading import load_model

    (tmp_path / "o.yaml").write_text(ORDERS_MODEL)
    lexicon = Lexicon(load_model(tmp_path / "o.yaml"))
    assert any(s.kind == "metric" and s.name == "orders" for s in lexicon.phrases[("order",)])
    assert ("count",) not in lexicon.phrases  # a filler *synonym* still does not become a metric

    with sqlite3.connect(tmp_path / "shop.sqlite") as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, ordered_on TEXT, region TEXT)")
        db.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(1, "2025-01-14", "north"), (2, "2025-02-03", "south"),
                                                                (3, "2024-12-30", "south")])
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_MODEL", raising=False)
    asked = CliRunner().invoke(build_app(), ["ask", "--json", "--database", f"sqlite:///{tmp_path / 'shop.sqlite'}",
                                             "--semantic", str(tmp_path / "o.yaml"), "How many orders in 2025?"])
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.stdout)["data"] == [{"orders": 2}]
