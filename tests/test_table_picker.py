"""The table picker (issue 23): which tables the model sees for a question, on hand-made schemas.

Each schema has more tables than the limit, so the picker has to choose; filler tables are
named so that no question word meets them.
"""

from __future__ import annotations

import datetime as dt
import random

from baton.specialists.sql.prompts import relevant_tables
from baton.specialists.sql.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo
from baton.specialists.sql.table_index import index_for, split_words, terms
from baton.specialists.sql.table_picker import pick_tables, shard_family


def table(name: str, *columns: str, schema: str | None = None, rows: int | None = None, description: str = "",
          comments: dict[str, str] | None = None, fks: list[ForeignKey] | None = None) -> TableInfo:
    cols = [ColumnInfo(c, "INTEGER", description=(comments or {}).get(c, "")) for c in columns]
    return TableInfo(name, cols, schema=schema, row_estimate=rows, description=description, foreign_keys=fks or [])


def make_schema(*tables: TableInfo, fillers: int = 20) -> SchemaInfo:
    info = SchemaInfo("duckdb")
    for t in tables:
        info.add(t)
    for i in range(fillers):
        info.add(table(f"aa_filler_{chr(97 + i % 26)}{chr(97 + i // 26)}", "quux", "zorp"))
    return info


def names(tables: list[TableInfo]) -> list[str]:
    return [t.name for t in tables]


def test_words_split_like_names_are_written():
    assert split_words("customerID2014") == ["customer", "id", "2014"]
    assert split_words("HTTPServer_log") == ["http", "server", "log"]
    assert split_words("gsod1929") == ["gsod", "1929"]
    assert split_words("UUIDs") == ["uuids"]
    assert terms("employees") == terms("employee") == ["employe"]
    assert terms("sales") == terms("sale")
    assert "2014" in terms("the report for 2014") and "the" not in terms("the report")
    assert "5" in terms("five-year estimates")  # number words as digits: five-year meets 5yr
    assert "zipcod" in terms("zip code") and "cytoband" in terms("CytoBands_hg38")
    assert "acs" in terms("the American Community Survey")


def test_plurals_meet_singular_names():
    schema = make_schema(table("employee", "id", "name"), table("sale", "id", "amount"), table("sales", "id", "total"),
                         table("department", "id", "title"))
    assert names(relevant_tables(schema, "How many employees joined last year?", 3))[0] == "employee"
    assert set(names(relevant_tables(schema, "Show the sales", 2))) == {"sale", "sales"}


def test_the_year_in_the_question_picks_the_table():
    schema = make_schema(table("report_2013", "id", "value"), table("report_2014", "id", "value"),
                         table("summary_23", "id"), table("summary_24", "id"))
    picked = relevant_tables(schema, "What did the report say in 2014?", 3)
    assert names(picked)[0] == "report_2014" and "report_2013" not in names(picked)  # one family, one member
    assert names(relevant_tables(schema, "What did the report say in 2013?", 3))[0] == "report_2013"
    assert names(relevant_tables(schema, "the summary of release 23", 2))[0] == "summary_23"


def test_a_shard_family_is_one_table_counted_once():
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(366)]
    shards = [table(f"events_{d:%Y%m%d}", "event_name", "user_pseudo_id", schema="analytics") for d in days]
    schema = make_schema(*shards, table("users", "user_id", "country"), fillers=30)
    picked = relevant_tables(schema, "How many events per user?", 12)
    assert len(picked) == 12
    events = [t for t in picked if t.name.startswith("events_")]
    assert len(events) == 1 and names(picked)[0] == "events_20241231"  # the newest stands for the family
    assert shard_family(schema, events[0]) == ("events_YYYYMMDD", "events_20240101", "events_20241231", 366)
    assert shard_family(schema, schema.tables["users"]) is None
    assert names(relevant_tables(schema, "events on 20240305", 3))[0] == "events_20240305"
    assert names(relevant_tables(schema, "events in 2024", 3))[0] == "events_20241231"


def test_a_family_without_dates_keeps_its_digits_as_a_pattern():
    schema = make_schema(*(table(f"batch{n}", "x") for n in (10001, 10002, 10003)), fillers=5)
    chosen = relevant_tables(schema, "the batch", 2)[0]
    assert shard_family(schema, chosen) == ("batchNNNNN", "batch10001", "batch10003", 3)


def test_inferred_keys_bring_the_join_partner():
    orders = table("orders", "order_id", "customer_id", "amount")
    schema = make_schema(orders, table("customers", "id", "name", "country"), table("payments", "payment_id", "amount"),
                         table("refunds", "refund_id", "amount"))
    assert names(relevant_tables(schema, "total order amount", 2)) == ["orders", "customers"]
    unjoined = make_schema(table("orders", "order_id", "buyer", "amount"), table("customers", "id", "name", "country"),
                           table("payments", "payment_id", "amount"), table("refunds", "refund_id", "amount"))
    assert "customers" not in names(relevant_tables(unjoined, "total order amount", 2))  # the join, not luck


def test_partners_from_declared_keys_role_keys_and_shared_keys():
    schema = make_schema(
        table("posts", "post_id", "owner_user_id"), table("users", "id", "name"),
        table("shipments", "tracking_id"), table("carrier_events", "tracking_id", "status"),
        table("invoice", "id", fks=[ForeignKey(["account"], "ledger", ["id"])]), table("ledger", "id"),
    )
    index = index_for(schema)

    def partners(name: str) -> set[str]:
        position = index.by_name[name]
        return {index.tables[j].name for j, _ in index.neighbours[position]}

    assert "users" in partners("posts")  # owner_user_id -> users
    assert partners("shipments") == {"carrier_events"}  # one rare key column in both
    assert partners("ledger") == {"invoice"}  # a declared foreign key, both ways


def test_a_partner_never_pushes_out_a_strong_match():
    schema = make_schema(table("orders", "id", "amount"), table("order_items", "id", "amount", "quantity", "warehouse_id"),
                         table("warehouses", "id", "city"))
    question = "order amount and quantity of order items"
    assert names(relevant_tables(schema, question, 4))[:2] == ["order_items", "orders"]  # half the limit: best matches
    assert "warehouses" in names(relevant_tables(schema, question, 4))  # then the partner, before fillers


def test_column_comments_are_searched():
    schema = make_schema(table("fct_x", "amt", "dt", comments={"amt": "Net revenue in EUR"}), table("dim_y", "code"))
    assert names(relevant_tables(schema, "What was the revenue last year?", 2))[0] == "fct_x"
    described = make_schema(table("t1", "a", description="Refunds issued to customers"), table("t2", "b"))
    assert names(relevant_tables(described, "refunds this month", 1)) == ["t1"]


def test_the_limit_is_filled_and_small_schemas_are_given_whole():
    schema = make_schema(table("orders", "id"), fillers=30)
    assert len(relevant_tables(schema, "orders", 12)) == 12
    assert len(relevant_tables(schema, "nothing here matches at all", 12)) == 12
    assert len(relevant_tables(schema, "", 12)) == 12
    small = make_schema(table("orders", "id"), table("b", "x"), fillers=0)
    assert names(relevant_tables(small, "anything", 12)) == ["orders", "b"]
    assert relevant_tables(schema, "orders", 0) == []
    shards = make_schema(*(table(f"log_{2000 + i}", "x") for i in range(20)), table("a", "y"), fillers=0)
    assert len(relevant_tables(shards, "logs", 12)) == 2  # two logical tables: the family counts once


def test_without_a_match_bigger_tables_come_first():
    schema = make_schema(table("small", "x", rows=10), table("big", "y", rows=10_000), fillers=5)
    assert names(relevant_tables(schema, "???", 2)) == ["big", "small"]


def test_a_table_named_in_the_question_comes_first():
    schema = make_schema(table("archive_orders_2019", "id", "amount"), table("orders_2019_archive", "id"))  # same words
    assert names(relevant_tables(schema, "SELECT amount FROM sales.orders_2019_archive", 1)) == ["orders_2019_archive"]
    assert names(relevant_tables(schema, "amount of orders 2019 archive", 1)) == ["archive_orders_2019"]


def test_releases_of_one_table_compete_for_one_place():
    releases = [table(f"products_{r}", "product_id", "trade_name") for r in range(23, 34)]
    schema = make_schema(table("products", "product_id", "trade_name"), *releases,
                         table("companies", "company_id", "name"), table("product_patents", "product_id", "patent"))
    picked = names(relevant_tables(schema, "trade name of products and their company in release 23", 4))
    assert picked[0] == "products_23"
    assert "companies" in picked and sum(p.startswith("products") for p in picked) <= 2


def test_the_index_is_built_once_per_schema_and_again_when_it_changes():
    schema = make_schema(table("orders", "id"))
    first = index_for(schema)
    relevant_tables(schema, "orders", 3)
    assert index_for(schema) is first
    schema.add(table("refunds", "id"))
    assert index_for(schema) is not first and "refunds" in index_for(schema).by_name
    assert names(relevant_tables(schema, "refunds", 1)) == ["refunds"]


def test_hostile_input_is_handled():
    metas = ["a.*b(", "[x]", "(?P<q>", "\\d+", "a|b", "$^", "()", "€uro_späße", "name\x00with\x1bcontrol"]
    schema = make_schema(*(table(m, m, "col\x07") for m in metas), table("orders", "id"))
    rng = random.Random(7)
    huge = " ".join(rng.choice(["orders", "revenue", "a.*b(", "\x00", "\u202e", "x" * 50]) for _ in range(200_000))
    assert len(huge) > 1_000_000
    for question in (huge, "\x00\x1b[2J orders \u2028", "a.*b( [x] (?P<q>", "" , "\ud800"):
        picked = pick_tables(schema, question, 5)
        assert len(picked) == 5 and len({t.name for t in picked}) == 5
    assert names(pick_tables(schema, "rows of a.*b( please", 1)) == ["a.*b("]


def test_five_thousand_tables():
    schema = SchemaInfo("duckdb")
    for i in range(5_000):
        schema.add(table(f"t{i:05d}_{['sales', 'stock', 'staff', 'audit'][i % 4]}", "id", f"c{i % 97}"))
    picked = relevant_tables(schema, "staff of t01234", 12)
    assert len(picked) == 12 and all(t.name.endswith("_staff") for t in picked[:6])


def test_a_description_filled_in_place_is_indexed():
    schema = make_schema(table("fct_x", "amt"), table("dim_y", "code"))
    assert names(relevant_tables(schema, "revenue", 1)) != ["fct_x"]
    schema.tables["fct_x"].columns[0].description = "Net revenue in EUR"  # as SQLConnection.describe() does
    assert names(relevant_tables(schema, "revenue", 1)) == ["fct_x"]


def test_a_hinted_table_ranks_up_but_not_above_a_table_the_question_names():
    schema = make_schema(table("customers", "customer_id", "country"), table("orders", "order_id", "amount"),
                         table("shipments", "shipment_id", "carrier"), fillers=40)
    question = "How much did orders from Germany bring in?"  # "Germany" is a value of customers.country
    assert "customers" not in names(relevant_tables(schema, question, 3))[:1]
    hinted = names(relevant_tables(schema, question, 3, hints=["customers"]))
    assert "customers" in hinted and "orders" in hinted
    named = names(relevant_tables(schema, "rows of order_items please", 3, hints=["shipments"]))
    assert "shipments" in named  # ranked up ...
    schema.add(table("order_items", "order_id", "sku"))
    named = names(relevant_tables(schema, "rows of order_items please", 3, hints=["shipments"]))
    assert named[0] == "order_items"  # ... but never above the table the question names
    assert names(relevant_tables(schema, question, 3, hints=["no_such_table", "CUSTOMERS"]))  # unknown names ignored


def test_the_prompt_tells_the_model_how_to_read_a_shard_family():
    from baton.specialists.sql.prompts import schema_text

    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(31)]
    schema = make_schema(*(table(f"events_{d:%Y%m%d}", "event_name") for d in days), fillers=20)
    picked = relevant_tables(schema, "events in January", 12)
    text = schema_text(schema, picked)
    assert "one of 31 shards events_YYYYMMDD (events_20240101 ... events_20240131), same columns" in text
    assert text.count("shards events_YYYYMMDD") == 1 and "UNION ALL" in text
    whole = schema_text(schema)  # every member listed: the family said once
    assert whole.count("shards events_YYYYMMDD") == 1
