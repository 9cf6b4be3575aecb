"""Two real dbt MetricFlow projects, read as they are and answered as MetricFlow answers (issue 22).

The expected rows come from MetricFlow itself (``fixtures/metricflow/oracle``, recorded by
``scripts/metricflow_oracle.py``); a case Baton does not compute must be refused by name.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from baton.semantic.errors import SemanticModelError
from baton.semantic.layer import SemanticLayer
from baton.semantic.loading import load_model
from baton.semantic.parser import AskBack
from baton.semantic.spine_source import GENERATED, GENERATED_COLUMN
from baton.specialists.sql.connection import SQLConnection
from metricflow_projects import FIXTURES, PROJECTS, ROW_CAP, cases, duckdb_file, load, outcome
from sql_test_databases import make_db  # noqa: F401  (fixture)

COMPUTED = {"simple", "time grain", "join dimension", "multi-hop dimension", "sum_boolean", "ratio", "small ratio",
            "derived", "metric filter on a joined dimension", "metric filter with entity_path", "metric by entity",
            "foreign entity without a primary", "where filter", "time range", "order and limit", "agg_time_dimension",
            "filter in a simple metric", "derived input alias", "primary_entity", "account balance (additive)",
            "fill_nulls_with without a time spine", "create_metric", "time dimension expr SQL", "filter on ratio or derived",
            "percentile / median", "metric filter Metric(...)", "fill_nulls_with / join_to_timespine",
            "measure expr with DATEDIFF", "conversion"}
# offset_window: windows of whole days and weeks are computed (issue 27), months are still refused: exact or refused;
# cumulative: computed by day on DuckDB and PostgreSQL, refused by name otherwise
# non_additive_dimension: computed unfiltered, refused by name when filtered
REFUSED: set[str] = set()


async def _outcomes(url: str, project: str) -> list[tuple[dict, str, str, str]]:
    layer = SemanticLayer(load_model(PROJECTS[project]), SQLConnection(url, id=project, allow_privileged_role=True,
                                                                      row_cap=ROW_CAP))
    out = []
    try:
        for case in (c for c in cases() if c["project"] == project):
            for mode in ("structured", "question"):
                if mode == "structured" or case.get("question"):
                    kind, detail = await outcome(layer, case, mode)
                    out.append((case, mode, kind, detail))
    finally:
        await layer.connection.aclose()
    return out


def _loaded(tmp_path, project: str) -> str:
    """A DuckDB file holding ``project``'s tables, its time spine too: Baton joins it (join_to_timespine)."""
    return duckdb_file(tmp_path, project, time_spine=True)


def _refusing(tmp_path) -> Path:
    """The tutorial with ``cumulative_transactions`` over a window Baton refuses (hours): a metric not computed."""
    project = tmp_path / "tutorial_refusing"
    shutil.copytree(PROJECTS["tutorial"], project)
    metrics = project / "models" / "sample_model" / "metrics.yml"
    old = "      measure: transactions\n  - name: cumulative_transactions_in_last_7_days"
    assert old in metrics.read_text()
    metrics.write_text(metrics.read_text().replace(old, "      measure: transactions\n      cumulative_type_params:\n"
                                                        "        window: 7 hours\n  - name: cumulative_transactions_in_last_7_days"))
    return project


def _judge(outcomes: list[tuple[dict, str, str, str]]) -> None:
    wrong = [(c["id"], mode, detail) for c, mode, kind, detail in outcomes if kind == "wrong"]
    assert not wrong, wrong
    for case, mode, kind, detail in outcomes:
        if mode == "structured" and case["construct"] in COMPUTED:
            assert kind == "exact", (case["id"], kind, detail)
        if case["construct"] in REFUSED:
            assert kind == "refused" and "does not compute yet" in detail, (case["id"], mode, kind, detail)


@pytest.mark.parametrize("project", sorted(PROJECTS))
async def test_duckdb_answers_as_metricflow_or_refuses_by_name(project, tmp_path):
    _judge(await _outcomes(_loaded(tmp_path, project), project))


@pytest.mark.parametrize("project", sorted(PROJECTS))
async def test_postgres_answers_as_metricflow_or_refuses_by_name(project, state_db):
    engine = sa.create_engine(state_db)
    load(engine, project, time_spine=True)  # the project's time spine: Baton joins it (join_to_timespine)
    engine.dispose()
    _judge(await _outcomes(state_db, project))


def test_both_projects_load_with_what_they_refuse_named():
    tutorial = load_model(PROJECTS["tutorial"])
    assert not [r.name for r in tutorial.refused if r.kind == "metric"]  # its cumulative ones: over a generated spine
    simple = load_model(PROJECTS["simple_manifest"])
    constructs = " ".join(r.construct for r in simple.refused)
    for construct in ("conversion", "approximate discrete percentile"):
        assert construct in constructs, construct
    assert "offset_window" not in constructs  # custom periods (custom_offsets.py) and hours (subdaily.py) are read too
    assert simple.metric("subdaily_cumulative_window_metric")  # its windows of hours: over its spine of hours (subdaily.py)
    assert simple.metric("booking_payments") and simple.measure("booking_payments").time is not None  # its own time
    insurance = load_model(PROJECTS["llm_benchmarking"])  # dbt's own keys (an entity's description) are dbt's, not typos
    assert not insurance.refused  # avg_time_to_settle_claim's DATEDIFF('day', ...) read (expressions.py)


def test_a_manifest_a_single_file_and_a_multi_document_file_read_like_the_directory(tmp_path):
    directory = load_model(PROJECTS["tutorial"])
    manifest = load_model(FIXTURES / "tutorial_semantic_manifest.json")
    # the manifest declares the time spine (project_configuration.time_spines); the directory declares it as dbt's
    # models: time_spine:, which Baton does not read: it gets a generated spine (spine_source.py)
    assert manifest.time_spine == ("all_days", "date_day") and directory.time_spine == (GENERATED, GENERATED_COLUMN)
    assert {m.name for m in manifest.metrics} == {m.name for m in directory.metrics}
    assert not manifest.refused and not directory.refused
    assert set(manifest.measures) == set(directory.measures)
    # the manifest writes a window as {count: 7, granularity: day}, the YAML as "7 days": one window
    assert manifest.metric("cumulative_transactions_in_last_7_days").cumulative == "window:7 day"
    assert directory.metric("cumulative_transactions_in_last_7_days").cumulative == "window:7 day"
    parts = sorted((PROJECTS["tutorial"] / "models" / "sample_model").glob("*.yml"))
    one = tmp_path / "all.yml"
    one.write_text("\n---\n".join(p.read_text() for p in parts))
    assert {m.name for m in load_model(one).metrics} == {m.name for m in directory.metrics}


def test_build_output_and_packages_are_skipped(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(PROJECTS["tutorial"], project)
    for skipped in ("target", "dbt_packages", "logs", ".git"):
        (project / skipped).mkdir()
        (project / skipped / "bad.yml").write_text("semantic_models: [{name: broken, nonsense: 1}]\n")
    assert load_model(project).has_metric("transactions")


def _project(tmp_path, metrics: str, extra_model: str = "") -> str:
    (tmp_path / "m.yml").write_text(f"""semantic_models:
  - name: orders
    model: ref('orders')
    defaults: {{agg_time_dimension: ds}}
    entities: [{{name: order, type: primary, expr: id}}]
    dimensions:
      - {{name: ds, type: time, type_params: {{time_granularity: day}}}}
      - {{name: status, type: categorical}}
    measures:
      - {{name: amount, agg: sum}}{extra_model}
metrics:
{metrics}""")
    return str(tmp_path / "m.yml")


@pytest.mark.parametrize(("metrics", "extra", "message"), [
    ("  - {name: mm, type: simple, type_params: {measure: nope}}", "", r"m\.yml:\d+: metric 'mm': measure 'nope' is not defined"),
    ("  - {name: aa, type: derived, type_params: {expr: bb + 1, metrics: [{name: bb}]}}\n"
     "  - {name: bb, type: derived, type_params: {expr: aa + 1, metrics: [{name: aa}]}}", "", r"m\.yml:\d+: a cycle of derived metrics"),
    ("  - {name: mm, type: simple, type_params: {measure: amount}, filter: \"{{ config.get('x') }} = 1\"}", "",
     r"m\.yml:\d+: unknown Jinja"),
    ("  - {name: mm, type: simple, type_params: {measure: amount}, filter: \"{{ __import__('os').system('id') }} = 1\"}", "",
     r"m\.yml:\d+: unknown Jinja"),
    ("  - {name: mm, type: simple, type_params: {measure: amount}, filtr: \"x\"}", "", r"m\.yml:\d+: metric 'mm'.*filtr"),
    ("  - {name: mm, type: simple, type_params: {measure: amount}, filter: \"{{ Dimension('order__nope') }} = 1\"}", "",
     r"m\.yml:\d+: the filter names 'order__nope'"),
    ("  - {name: mm, type: simple, type_params: {measure: amount}}", "\n      - {name: bad, agg: sum, expr: x, nonsense: 1}",
     r"m\.yml:\d+: semantic model 'orders' at measures\.1"),
])
def test_a_broken_project_is_one_clear_error_with_file_and_line(tmp_path, metrics, extra, message):
    with pytest.raises(SemanticModelError, match=message):
        load_model(_project(tmp_path, metrics, extra))


def test_malformed_yaml_oversized_files_and_yaml_bombs_are_refused(tmp_path):
    (tmp_path / "bad.yml").write_text("semantic_models:\n  - name: x\n   bad: [\n")
    with pytest.raises(SemanticModelError, match=r"bad\.yml:\d+: not valid YAML"):
        load_model(tmp_path / "bad.yml")
    big = tmp_path / "big"
    big.mkdir()
    (big / "huge.yml").write_text("metrics: []\n# " + "x" * 10_100_000 + "\n")
    with pytest.raises(SemanticModelError, match="larger than the limit of 10 MB"):
        load_model(big)
    bomb = tmp_path / "bomb.yml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    bomb.write_text("\n".join(lines) + "\nmetrics: [*a7]\n")
    with pytest.raises(SemanticModelError, match="expands to more than"):
        load_model(bomb)
    with pytest.raises(SemanticModelError, match="no such file"):
        load_model(tmp_path / "missing.yml")


def test_a_project_of_too_many_files_is_refused(tmp_path, monkeypatch):
    from baton.semantic import mf_project

    monkeypatch.setattr(mf_project, "MAX_FILES", 3)
    for i in range(5):
        (tmp_path / f"f{i}.yml").write_text("models: []\n")
    with pytest.raises(SemanticModelError, match="more than 3 YAML files"):
        load_model(tmp_path)


async def test_a_question_naming_a_metric_not_computed_is_refused_by_name_not_read_as_another(tmp_path):
    url = _loaded(tmp_path, "tutorial")
    layer = SemanticLayer(load_model(_refusing(tmp_path)), SQLConnection(url, id="t"))
    try:
        parsed = (await layer.ready()).parse("Total transactions by month")  # the cumulative metric's label
    finally:
        await layer.connection.aclose()
    assert isinstance(parsed, AskBack) and parsed.reason == "not_computed"
    assert "cumulative_transactions" in parsed.message and "does not compute yet" in parsed.message


async def test_a_small_ratio_is_exact_not_rounded_to_zero(tmp_path):
    url = _loaded(tmp_path, "simple_manifest")
    from baton.semantic.mf_query import query_from_params

    layer = SemanticLayer(load_model(PROJECTS["simple_manifest"]), SQLConnection(url, id="s"))
    try:
        compiled, report = await layer.run(query_from_params(layer.model, {"metrics": ["bookings_per_dollar"]}))
    finally:
        await layer.connection.aclose()
    value = report.result.rows[0][0]
    expected = json.loads((FIXTURES / "oracle" / "simple_manifest.json").read_text())
    theirs = next(r for r in expected if r["request"] == {"metrics": ["bookings_per_dollar"]})["rows"][0][0]
    assert 0 < value < 0.01 and value == pytest.approx(theirs, rel=1e-9)
    assert "ROUND" not in compiled.sql.upper()


def test_semantic_check_exits_1_naming_what_it_does_not_compute_and_2_when_it_cannot_read(tmp_path):
    from typer.testing import CliRunner

    from baton.cli import build_app

    url = _loaded(tmp_path, "tutorial")
    runner, app = CliRunner(), build_app()
    result = runner.invoke(app, ["semantic", "check", str(_refusing(tmp_path)), "--database", url,
                                 "--unsafe-allow-privileged-role"])
    assert result.exit_code == 1, result.output
    assert "not computed: metric cumulative_transactions: a cumulative window" in result.output
    assert "metrics.yml:" in result.output
    (tmp_path / "bad.yml").write_text("metrics:\n  - {name: mm, type: simple, type_params: {measure: x}, bogus: 1}\n")
    result = runner.invoke(app, ["semantic", "check", str(tmp_path / "bad.yml"), "--database", url])
    assert result.exit_code == 2 and "bogus" in result.output and "Traceback" not in result.output


def _duckdb(tmp_path, *statements: str) -> str:
    url = f"duckdb:///{tmp_path / 'own.duckdb'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)
    engine.dispose()
    return url


HOSTILE = """semantic_models:
  - name: orders
    model: ref('orders')
    defaults: {agg_time_dimension: ds}
    entities: [{name: order, type: primary, expr: id}]
    dimensions:
      - {name: ds, type: time, type_params: {time_granularity: day}}
      - {name: status, type: categorical}
      - {name: secret, type: categorical, expr: "(SELECT string_agg(table_name, ',') FROM information_schema.tables)"}
    measures:
      - {name: amount, agg: sum}
      - {name: stolen, agg: sum, expr: "length(pg_read_file('/etc/passwd'))"}
metrics:
  - {name: amount, type: simple, type_params: {measure: amount}}
  - {name: stolen, type: simple, type_params: {measure: stolen}}
  - {name: dropped, type: simple, type_params: {measure: amount}, filter: "1 = 1; DROP TABLE orders"}
  - {name: sleepy, type: simple, type_params: {measure: amount}, filter: "{{ Dimension('order__status') }} = pg_sleep(10)::text"}
"""


async def test_hostile_expressions_in_a_project_are_refused_by_name_and_nothing_runs(tmp_path):
    url = _duckdb(tmp_path, "CREATE TABLE orders (id INTEGER, ds DATE, status VARCHAR, amount DOUBLE)",
                  "INSERT INTO orders VALUES (1, DATE '2024-01-02', 'open', 2.5), (2, DATE '2024-02-03', 'done', 4)")
    (tmp_path / "p.yml").write_text(HOSTILE)
    model = load_model(tmp_path / "p.yml")
    refused = {r.name: r.construct for r in model.refused}
    assert set(refused) == {"secret", "stolen", "dropped", "sleepy"}, refused
    assert all("does not read" in c for c in refused.values()), refused
    assert not model.has_dimension("secret") and not model.has_metric("stolen")
    from baton.semantic.mf_query import query_from_params
    from baton.semantic.query import SemanticQueryError

    layer = SemanticLayer(model, SQLConnection(url, id="h"))
    try:
        for name in ("stolen", "dropped", "sleepy"):
            with pytest.raises(SemanticQueryError, match="does not compute yet"):
                query_from_params(model, {"metrics": [name]})
        _, report = await layer.run(query_from_params(model, {"metrics": ["amount"], "group_by": ["metric_time__month"]}))
    finally:
        await layer.connection.aclose()
    assert [tuple(r) for r in report.result.rows] == [("2024-01", 2.5), ("2024-02", 4.0)]
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 2  # still there
    engine.dispose()


async def test_a_time_dimension_whose_expr_is_sql_groups_by_it(tmp_path):
    url = _duckdb(tmp_path, "CREATE TABLE orders (id INTEGER, ordered_at TIMESTAMP, amount DOUBLE)",
                  "INSERT INTO orders VALUES (1, TIMESTAMP '2024-01-31 23:30:00', 2), (2, TIMESTAMP '2024-02-01 00:10:00', 3)")
    (tmp_path / "p.yml").write_text("""semantic_models:
  - name: orders
    model: ref('orders')
    defaults: {agg_time_dimension: ordered_day}
    entities: [{name: order, type: primary, expr: id}]
    dimensions:
      - {name: ordered_day, type: time, expr: "cast(ordered_at as date)", type_params: {time_granularity: day}}
    measures:
      - {name: revenue, agg: sum, expr: amount, create_metric: true}
""")
    model = load_model(tmp_path / "p.yml")
    assert model.has_metric("revenue")  # create_metric: true
    from baton.semantic.mf_query import query_from_params

    layer = SemanticLayer(model, SQLConnection(url, id="c"))
    try:
        _, report = await layer.run(query_from_params(model, {"metrics": ["revenue"], "group_by": ["metric_time__day"]}))
    finally:
        await layer.connection.aclose()
    assert [tuple(r) for r in report.result.rows] == [("2024-01-31", 2.0), ("2024-02-01", 3.0)]


def test_the_models_prompt_names_what_is_not_computed_so_it_is_not_approximated(tmp_path):
    from baton.semantic.tool import catalog

    layer = SemanticLayer(load_model(_refusing(tmp_path)), SQLConnection("duckdb:///:memory:", id="x"))
    text = catalog(layer)
    assert "- metric cumulative_transactions: a cumulative window" in text
    assert "never approximate them with run_sql" in text


def test_a_multi_hop_name_whose_path_baton_would_not_take_is_refused():
    from baton.semantic.mf_query import query_from_params
    from baton.semantic.query import SemanticQueryError

    model = load_model(PROJECTS["tutorial"])
    assert query_from_params(model, {"metrics": ["transactions"], "group_by": ["customer__country__region"]}).by == ("region",)
    with pytest.raises(SemanticQueryError, match="another way"):  # three hops named, Baton joins in two
        query_from_params(model, {"metrics": ["transactions"], "group_by": ["transaction__customer__country__region"]})


async def test_on_the_answer_path_a_metric_not_computed_is_a_typed_failure_and_a_computed_one_answers(tmp_path):
    from baton.state.location import State
    from baton.workspace.database import open_database_workspace

    url = _loaded(tmp_path, "tutorial")
    state = State.from_env(env={}, home=tmp_path / "home")
    async with open_database_workspace(url, None, state=state, semantic=_refusing(tmp_path)) as ws:
        refused = await ws.answer("Total transactions")
        answered = await ws.answer("Cancellation rate by customer country")
    assert refused.error_code == "metric_not_computed" and refused.results is None
    assert "cumulative_transactions" in (refused.error or "") and "does not compute yet" in (refused.error or "")
    assert answered.error is None and answered.metadata["semantic_query"]["metrics"] == ["cancellation_rate"]
    oracle = next(c["oracle"] for c in cases() if c["id"] == "t20")
    from metricflow_projects import same_rows

    assert same_rows([tuple(r) for r in answered.results.rows], oracle["rows"], ordered=False)


@pytest.mark.parametrize("manifest", [
    {"semantic_models": "x"},
    {"semantic_models": [{"name": "a", "node_relation": {"alias": "t"}, "dimensions": ["x"]}], "metrics": []},
    {"semantic_models": [{"name": "a", "node_relation": {"alias": "t"}}], "metrics": [1]},
    {"semantic_models": [{"name": "a", "node_relation": {"alias": "t"}, "measures": [{"name": "m", "agg": "sum"}]}],
     "metrics": [{"name": "x", "type": "simple", "type_params": {"measure": {"name": "m", "filter": {"where_filters": 3}}}}]},
    [],
])
def test_a_malformed_manifest_is_one_clear_error(tmp_path, manifest):
    path = tmp_path / "semantic_manifest.json"
    path.write_text(json.dumps(manifest))
    with pytest.raises(SemanticModelError, match="semantic_manifest.json"):
        load_model(path)
