"""The benchmark databases of issue 28 load, and every gold query runs on every copy and returns
rows, the same rows on PostgreSQL, MariaDB and DuckDB (so the gold of bench/own_database.py
cannot rot unnoticed); the held-out sets (``<db>_heldout.yaml``, and Northwind's) too. A server
whose URL is unset is skipped."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from own_database_fixtures import (
    SHOP,
    build_chinook,
    build_northwind,
    build_shop,
    fresh_mysql_database,
    load_questions,
    run_gold,
    shop_rows,
)
from pg_fresh import fresh_database
from semantic_gold import rows_match


def _gold_rows(kind: str, target: str, database: str, held_out: bool = False) -> dict[str, list[list]]:
    return {case.question: run_gold(kind, target, case.gold_sql(kind)) for case in load_questions(database, held_out)}


def _assert_every_question_has_rows(found: dict[str, list[list]], database: str, held_out: bool = False) -> None:
    questions = load_questions(database, held_out)
    assert len(questions) >= (30 if held_out else 40) and len({c.question for c in questions}) == len(questions)
    # "last year" reads today's date: once the data is older than that, its gold is empty, rightly
    relative = {c.question for c in questions if "CURRENT_DATE" in c.sql}
    empty = [q for q, rows in found.items() if q not in relative and (not rows or all(v is None for row in rows for v in row))]
    assert not empty, empty


def test_the_shop_is_the_same_on_every_call_and_its_comments_say_what_columns_mean():
    first, second = shop_rows(), shop_rows()
    assert first == second
    assert {t.name: len(first[t.name]) for t in SHOP} == {"countries": 12, "customers": 700, "categories": 6, "products": 60,
                                                          "orders": 3000, "order_items": 6446}
    assert all(c.comment for t in SHOP for c in t.columns)


@pytest.fixture(scope="module")
def shop_copies(tmp_path_factory) -> Iterator[dict[str, str]]:
    """The shop on DuckDB, and on each server whose URL is set (module scope: built once)."""
    import os

    copies: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        path = str(tmp_path_factory.mktemp("shop") / "shop.duckdb")
        build_shop("duckdb", path)
        copies["duckdb"] = path
        if os.environ.get("BATON_TEST_POSTGRES_URL"):
            copies["postgres"] = stack.enter_context(fresh_database(os.environ["BATON_TEST_POSTGRES_URL"], prefix="baton_own"))
            build_shop("postgres", copies["postgres"])
        if os.environ.get("BATON_TEST_MYSQL_URL"):
            copies["mysql"] = stack.enter_context(fresh_mysql_database(os.environ["BATON_TEST_MYSQL_URL"]))
            build_shop("mysql", copies["mysql"])
        yield copies


@pytest.mark.parametrize("held_out", [False, True], ids=["questions", "heldout"])
@pytest.mark.parametrize("kind", ["duckdb", "postgres", "mysql"])
def test_every_shop_gold_query_returns_rows_and_the_same_rows_as_duckdb(shop_copies, kind, held_out):
    if kind not in shop_copies:
        pytest.skip(f"BATON_TEST_{'POSTGRES' if kind == 'postgres' else 'MYSQL'}_URL is not set: this copy needs that server")
    found = _gold_rows(kind, shop_copies[kind], "shop", held_out)
    _assert_every_question_has_rows(found, "shop", held_out)
    if kind != "duckdb":
        reference = _gold_rows("duckdb", shop_copies["duckdb"], "shop", held_out)
        ordered = {c.question: c.ordered for c in load_questions("shop", held_out)}
        differ = [q for q, rows in found.items() if not rows_match(rows, reference[q], ordered=ordered[q])]
        assert not differ, differ


def test_the_shop_comments_are_read_back_on_duckdb(shop_copies):
    import duckdb

    con = duckdb.connect(shop_copies["duckdb"], read_only=True)
    try:
        comment = con.execute("SELECT comment FROM duckdb_columns() WHERE table_name = 'order_items' "
                              "AND column_name = 'line_total'").fetchone()
    finally:
        con.close()
    assert comment is not None and comment[0].startswith("Revenue of this line")


def test_chinook_loads_with_its_comments_and_every_gold_query_returns_rows(postgres_url):
    with fresh_database(postgres_url, prefix="baton_own") as url:
        build_chinook(url)
        found = _gold_rows("postgres", url, "chinook")
        _assert_every_question_has_rows(found, "chinook")
        assert found["How many tracks are there?"] == [[3503]]
        held_out = _gold_rows("postgres", url, "chinook", held_out=True)
        _assert_every_question_has_rows(held_out, "chinook", held_out=True)
        assert held_out["number of genres"] == [[25]] and held_out["how many tracks does AC/DC have"] == [[18]]
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.connect() as c:
            comment = c.exec_driver_sql("SELECT col_description('invoice'::regclass, 9)").scalar()  # invoice.total
        engine.dispose()
        assert comment == "Amount invoiced, in US dollars: the revenue of the invoice"


def test_northwind_loads_with_exact_money_and_its_comments_and_every_held_out_gold_query_returns_rows(postgres_url):
    with fresh_database(postgres_url, prefix="baton_own") as url:
        build_northwind(url)
        found = _gold_rows("postgres", url, "northwind", held_out=True)
        _assert_every_question_has_rows(found, "northwind", held_out=True)
        assert found["How many customers do we have?"] == [[91]] and found["order count per year"] == [["1996", 152], ["1997", 408],
                                                                                                          ["1998", 270]]
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.connect() as c:
            kinds = dict(c.exec_driver_sql("SELECT column_name, data_type FROM information_schema.columns "
                                           "WHERE table_name = 'order_details'").fetchall())
            comment = c.exec_driver_sql("SELECT obj_description('order_details'::regclass)").scalar()
        engine.dispose()
        assert kinds["unit_price"] == kinds["discount"] == "numeric" and comment.startswith("Lines of an order")


def test_the_checklist_is_read_from_its_json_or_its_printed_lines_and_applied_except_what_is_declined(tmp_path):
    import json

    from own_database_checklist import apply_checklist, checklist_items

    draft = {"measures": [{"name": "customers_count", "entity": "customers", "agg": "count", "expr": "1",
                           "filter": "deleted_at IS NULL"}, {"name": "invoice_total", "entity": "invoice", "agg": "sum", "expr": "total"}],
             "metrics": [{"name": "revenue", "measure": "invoice_total"}], "dimensions": []}
    checklist = [
        {"kind": "soft-delete", "target": "entity customers", "suggestion": "remove the filter if deleted rows still count",
         "apply": [{"op": "remove", "path": ["measures", "customers_count", "filter"]}]},
        {"kind": "metric", "target": "metric revenue", "suggestion": "use the lines",
         "apply": [{"op": "add", "path": ["measures"], "value": {"name": "line_revenue", "entity": "invoice_line", "agg": "sum",
                                                                   "expr": "unit_price * quantity"}},
                   {"op": "set", "path": ["metrics", "revenue", "measure"], "value": "line_revenue"}]},
        {"kind": "dimension", "target": "column employee.state", "suggestion": "1 distinct value: left out", "apply": []},
    ]
    (tmp_path / "c.json").write_text(json.dumps(checklist), encoding="utf-8")
    items = checklist_items("", tmp_path / "c.json")
    edited, applied = apply_checklist(draft, items, {("soft-delete", "entity customers"): "closed accounts are not customers"})
    assert [i.target for i in applied] == ["metric revenue"]
    assert edited["metrics"] == [{"name": "revenue", "measure": "line_revenue"}]
    assert [m["name"] for m in edited["measures"]] == ["customers_count", "invoice_total", "line_revenue"]
    assert edited["measures"][0]["filter"] == "deleted_at IS NULL" and draft["metrics"][0]["measure"] == "invoice_total"
    edited, applied = apply_checklist(draft, items)
    assert len(applied) == 2 and "filter" not in edited["measures"][0]

    printed = "decided:\n  metric revenue: order_items.line_total\nchecklist (2 to check):\n" \
              "- [ ] soft-delete: entity customers: rows with deleted_at set are left out\n- [ ] unit: column a.b_cents: keep it?\nwrote x"
    lines = checklist_items(printed)
    assert [(i.kind, i.target, i.apply) for i in lines] == [("soft-delete", "entity customers", ()), ("unit", "column a.b_cents", ())]
    assert checklist_items("wrote draft.yaml: 6 entities") == []
