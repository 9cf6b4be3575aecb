"""Hostile semantic models and hostile questions: refused, and nothing runs or changes.

A model is written by someone (a colleague, a repository, ``baton semantic init`` edited by
hand), so its SQL fragments are input: an expression that is not a pure expression is
refused when the model loads; a model that names a secret catalog or another schema loads
(its names are plain identifiers) but every query compiled from it is refused by the
workspace's safety check. A question's words reach SQL only as quoted literals of values
the data holds; a tool call's values must be such values.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3

import pytest
import yaml

from baton.demo.data import build_demo_database
from baton.semantic.compiler import compile_query
from baton.semantic.errors import SemanticModelError
from baton.semantic.layer import SemanticLayer
from baton.semantic.loading import demo_model_path, load_model
from baton.semantic.native import model_from_dict
from baton.semantic.parser import AskBack, Parsed
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.tool import query_from_arguments
from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.safety import RelationPolicy, check_safety


def _model(expr: str = "amount", *, filter: str | None = None, dimension: str = "category", table: str = "monthly_costs",
           schema: str | None = None) -> dict:
    entity = {"name": "cost_line", "table": table}
    if schema:
        entity["schema"] = schema
    measure = {"name": "cost_amount", "entity": "cost_line", "agg": "sum", "expr": expr}
    if filter:
        measure["filter"] = filter
    return {"name": "hostile", "entities": [entity], "measures": [measure], "metrics": [{"name": "cost", "measure": "cost_amount"}],
            "dimensions": [{"name": "cost_category", "entity": "cost_line", "expr": dimension}]}


@pytest.mark.parametrize("expr", [
    "amount); DROP TABLE monthly_costs; --",
    "amount; DELETE FROM monthly_costs",
    "(SELECT password FROM users)",
    "amount + (SELECT MAX(amount) FROM monthly_revenue)",
    "pg_read_file('/etc/passwd')",
    "load_extension('/tmp/evil.so')",
    "sleep(100)",
    "users.password",
    "main.monthly_costs.amount",
    "*",
    "amount /* comment */ UNION SELECT 1",
    "EXISTS (SELECT 1)",
    "amount IN (SELECT id FROM products)",
    "?",
])
def test_an_expression_that_is_not_a_pure_expression_is_refused_when_the_model_loads(expr):
    with pytest.raises(SemanticModelError):
        model_from_dict(_model(expr))
    with pytest.raises(SemanticModelError):
        model_from_dict(_model("amount", filter=expr))
    with pytest.raises(SemanticModelError):
        model_from_dict(_model("amount", dimension=expr))


@pytest.mark.parametrize("bad", [{"table": "monthly_costs; DROP TABLE x"}, {"table": "t\"x"}, {"schema": "main; --"}])
def test_names_are_plain_identifiers(bad):
    model = _model()
    model["entities"][0].update(bad)
    with pytest.raises(SemanticModelError, match="plain identifier"):
        model_from_dict(model)


def test_unknown_keys_and_python_tags_are_refused(tmp_path):
    model = _model()
    model["measures"][0]["filtr"] = "deleted_at IS NULL"  # a typo must not silently drop a soft-delete filter
    with pytest.raises(SemanticModelError, match="unknown key"):
        model_from_dict(model)
    path = tmp_path / "tagged.yaml"
    path.write_text("name: !!python/object/apply:os.system ['touch /tmp/baton_pwned']\n")
    with pytest.raises(SemanticModelError):
        load_model(path)


def test_a_model_over_a_secret_catalog_compiles_but_every_query_is_refused_by_the_safety_check():
    model = model_from_dict({
        "name": "secrets", "entities": [{"name": "role", "table": "pg_authid"}],
        "measures": [{"name": "roles", "entity": "role", "agg": "count", "expr": "1"}],
        "metrics": [{"name": "role_count", "measure": "roles"}],
        "dimensions": [{"name": "password", "entity": "role", "expr": "rolpassword"}],
    })
    compiled = compile_query(model, SemanticQuery(("role_count",), ("password",)), "postgres")
    verdict = check_safety(compiled.sql, "postgres", relations=RelationPolicy(frozenset({"public"}), "public"))
    assert not verdict.safe and "pg_authid" in verdict.reason


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = build_demo_database(tmp_path_factory.mktemp("hostile") / "finance.sqlite", sales_rows=300)
    with sqlite3.connect(path) as db:  # a value written by anyone: quotes and SQL in the data itself
        db.execute("UPDATE roadshow_events SET city = 'O''Brien''; DROP TABLE products; --' WHERE city = 'Paris'")
    return path


def _checksum(path) -> str:
    with contextlib.closing(sqlite3.connect(path)) as db:
        digest = hashlib.sha256()
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            digest.update(name.encode())
            for row in db.execute(f"SELECT * FROM {name}"):
                digest.update(repr(row).encode())
    return digest.hexdigest()


async def test_a_model_reading_another_schema_is_refused_when_it_runs(demo):
    model = model_from_dict(_model(schema="temp"))
    layer = SemanticLayer(model, SQLConnection(f"sqlite:///{demo}", id="hostile"))
    try:
        _, report = await layer.run(SemanticQuery(("cost",)))
    finally:
        await layer.connection.aclose()
    assert report.unsafe is not None and report.result is None and "outside this workspace" in report.unsafe.reason


@pytest.mark.parametrize("question", [
    "Revenue for Epson' OR '1'='1 in 2025",
    "revenue; DROP TABLE monthly_revenue; --",
    "Revenue by business_unit UNION SELECT sql FROM sqlite_master",
    "tickets sold in Paris\"; DELETE FROM roadshow_events; --",
    "profit'); ATTACH DATABASE '/tmp/x' AS x; --",
])
async def test_sql_in_a_question_never_reaches_sql(demo, question):
    before = _checksum(demo)
    layer = SemanticLayer(load_model(demo_model_path()), SQLConnection(f"sqlite:///{demo}", id="hostile"))
    try:
        outcome = (await layer.ready()).parse(question)
        assert isinstance(outcome, AskBack)  # unknown words (or a breakdown it cannot make): asked back, nothing compiled
        for reading in outcome.readings:  # what it offers instead is made of indexed values only
            assert all(v in layer.values[d] for d, values in reading.where for v in values)
    finally:
        await layer.connection.aclose()
    assert _checksum(demo) == before


async def test_a_hostile_value_in_the_data_is_a_quoted_literal(demo):
    before = _checksum(demo)
    layer = SemanticLayer(load_model(demo_model_path()), SQLConnection(f"sqlite:///{demo}", id="hostile"))
    try:
        parser = await layer.ready()
        outcome = parser.parse("How many tickets were sold in O'Brien'; DROP TABLE products; --?")
        assert isinstance(outcome, Parsed), outcome
        compiled, report = await layer.run(outcome.query)
    finally:
        await layer.connection.aclose()
    assert "'O''Brien''; DROP TABLE products; --'" in compiled.sql and report.result is not None
    with contextlib.closing(sqlite3.connect(demo)) as db:
        gold = db.execute("SELECT SUM(tickets_sold) FROM roadshow_events WHERE city LIKE 'O''Brien%' AND deleted_at IS NULL").fetchone()
    assert report.result.rows == [[gold[0]]] and _checksum(demo) == before


async def test_a_tool_call_may_filter_only_on_values_the_data_holds(demo):
    layer = SemanticLayer(load_model(demo_model_path()), SQLConnection(f"sqlite:///{demo}", id="hostile"))
    try:
        await layer.ready()
        ok = query_from_arguments({"metrics": ["revenue"], "filters": [{"dimension": "business_unit", "values": ["epson"]}]}, layer)
        assert ok.where == (("business_unit", ("Epson",)),)  # matched to the stored value
        for arguments in (
            {"metrics": ["revenue"], "filters": [{"dimension": "business_unit", "values": ["Epson' OR '1'='1"]}]},
            {"metrics": ["revenue"], "periods": ["2025'; DROP TABLE monthly_revenue; --"]},
            {"metrics": ["revenue; DROP TABLE x"]},
            {"metrics": ["revenue"], "by": ["sqlite_master"]},
            {"metrics": ["revenue"], "limit": "5; DROP"},
            {"metrics": ["revenue"], "filters": [{"dimension": "name FROM sqlite_master --", "values": ["x"]}]},
        ):
            with pytest.raises(SemanticQueryError):
                query_from_arguments(arguments, layer)
    finally:
        await layer.connection.aclose()


def test_a_model_too_large_or_not_a_mapping_is_refused(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("name: x\n# " + "a" * 1_100_000 + "\n")
    with pytest.raises(SemanticModelError, match="larger than"):
        load_model(path)
    path.write_text(yaml.safe_dump(["not", "a", "model"]))
    with pytest.raises(SemanticModelError):
        load_model(path)
