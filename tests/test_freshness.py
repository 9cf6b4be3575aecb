"""Data freshness: a database's freshness setting, checked like any SQL, and the
``staleness_warning`` on answers whose SQL ran on data older than its limit (issue 17)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import sqlite3

import pytest
from typer.testing import CliRunner

from baton.agents import AgentContext
from baton.answer_markdown import to_markdown
from baton.cli import build_app
from baton.llm import ScriptedModel, tool_call
from baton.mcp.shapes import structured_answer
from baton.messages import LLMResponse
from baton.response import AIMessage
from baton.specialists.sql import SQLAgent, SQLConnection
from baton.specialists.sql.freshness import (
    DataAge,
    Freshness,
    FreshnessProbe,
    FreshnessQueryError,
    as_utc,
    duration,
    parse_age,
)
from baton.specialists.sql.memory_port import LearningsOnly, MemoryBundle
from baton.state.location import State
from baton.verified import VerifiedQuestion
from baton.workspace.database import open_database_workspace
from baton.workspace.verified import save_verified_question

DAY = dt.timedelta(days=1)
NOW = dt.datetime.now(dt.UTC)
QUESTION = "How many orders are there?"
COUNT = "SELECT COUNT(*) AS orders FROM orders"
LOG = "baton.specialists.sql.freshness"


def shop(path, loaded_at: dt.datetime | None) -> str:
    """A SQLite shop whose ``etl_runs`` says when it was loaded (none when ``loaded_at`` is None)."""
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT, amount REAL);
            INSERT INTO orders VALUES (1, 'North', 10), (2, 'South', 30), (3, 'North', 5);
            CREATE TABLE etl_runs (id INTEGER PRIMARY KEY, loaded_at TEXT);
        """)
        if loaded_at is not None:
            db.execute("INSERT INTO etl_runs (loaded_at) VALUES (?), (?)",
                       ((loaded_at - DAY).strftime("%Y-%m-%d %H:%M:%S"), loaded_at.strftime("%Y-%m-%d %H:%M:%S")))
    return f"sqlite:///{path}"


def verified_agent(url: str, freshness: Freshness | None, **options) -> SQLAgent:
    connection = SQLConnection(url, id="shop", freshness=freshness, **options)
    return SQLAgent(connection, present=False, verified=[VerifiedQuestion(QUESTION, COUNT, "sql")])


async def ask(agent: SQLAgent, question: str = QUESTION, model=None) -> AIMessage:
    try:
        result = await agent.run(AgentContext(llm_router=model), question=question)
    finally:
        await agent.connection.aclose()
    assert result.status == "success", result.error
    assert result.ai_message is not None
    return result.ai_message


LOADED = Freshness("SELECT max(loaded_at) FROM etl_runs", DAY)


# --- stale and fresh data ----------------------------------------------------------------------------------------

async def test_an_answer_on_data_older_than_the_limit_says_so(tmp_path):
    loaded = (NOW - dt.timedelta(days=3, hours=2)).replace(second=0, microsecond=0)
    url = shop(tmp_path / "shop.sqlite", loaded)
    model = ScriptedModel([LLMResponse(tool_calls=[tool_call("run_sql", {"sql": COUNT})]), "Three orders."])
    connection = SQLConnection(url, id="shop", freshness=LOADED)
    message = await ask(SQLAgent(connection, present=False), "Count the orders", model)
    assert message.staleness_warning == (
        f"The data was last loaded 3 days ago ({loaded:%Y-%m-%d %H:%M} UTC), "
        "older than this workspace's freshness limit of 1 day.")
    freshness = message.meta["data_freshness"]
    assert freshness["stale"] and freshness["max_age_s"] == 86400 and freshness["age_s"] > 3 * 86400
    assert dt.datetime.fromisoformat(freshness["loaded_at"]) == loaded
    back = AIMessage.from_json(message.to_json())
    assert back.staleness_warning == message.staleness_warning and back.meta["data_freshness"] == freshness
    mcp = structured_answer(message)  # what an MCP client reads
    assert mcp["staleness_warning"] == message.staleness_warning and mcp["partial"] is False
    assert to_markdown(message).endswith(f"> ⚠ {message.staleness_warning}")  # OpenAI-compatible chat clients


async def test_fresh_data_gets_no_warning_but_says_when_it_was_loaded(tmp_path):
    url = shop(tmp_path / "shop.sqlite", NOW - dt.timedelta(hours=2))
    message = await ask(verified_agent(url, LOADED))
    assert message.staleness_warning is None
    assert message.meta["data_freshness"]["stale"] is False and message.meta["data_freshness"]["age_s"] >= 7200


async def test_no_setting_no_lookup(tmp_path):
    message = await ask(verified_agent(shop(tmp_path / "shop.sqlite", NOW - 9 * DAY), None))
    assert message.staleness_warning is None and "data_freshness" not in message.metadata


async def test_a_table_and_column_pair_and_a_verified_answer(tmp_path):
    url = shop(tmp_path / "shop.sqlite", NOW - 2 * DAY)
    message = await ask(verified_agent(url, Freshness.column("etl_runs", "loaded_at", dt.timedelta(hours=12))))
    assert message.meta["fast_path"] == "verified_question"
    assert message.staleness_warning and "last loaded 2 days ago" in message.staleness_warning
    assert "freshness limit of 12 hours" in message.staleness_warning


class StaleMemory(LearningsOnly):
    async def bundle_for(self, question: str, connection_id: str) -> MemoryBundle:
        return MemoryBundle("- Orders live in the orders table", stale=("learning 'Orders live in orders' (not confirmed in 40 days)",))

    async def record_learnings(self, learnings) -> None:
        return None


async def test_stale_data_and_a_stale_learning_are_both_said_data_first(tmp_path):
    url = shop(tmp_path / "shop.sqlite", NOW - 3 * DAY)
    model = ScriptedModel([LLMResponse(tool_calls=[tool_call("run_sql", {"sql": COUNT})]), "Three orders."])
    agent = SQLAgent(SQLConnection(url, id="shop", freshness=LOADED), present=False, memory=StaleMemory())
    message = await ask(agent, "Count the orders", model)
    warning = message.staleness_warning or ""
    assert warning.startswith("The data was last loaded 3 days ago")
    assert warning.endswith("May be out of date: it relied on learning 'Orders live in orders' (not confirmed in 40 days)")
    assert message.meta["stale_memory"] and message.meta["data_freshness"]["stale"]


async def test_duckdb_timestamps_with_and_without_a_zone(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "shop.duckdb"
    with duckdb.connect(str(path)) as db:
        db.execute("CREATE TABLE orders (id INTEGER, amount DOUBLE)")
        db.execute("INSERT INTO orders VALUES (1, 10), (2, 30), (3, 5)")
        db.execute("CREATE TABLE etl_runs (loaded_at TIMESTAMP, loaded_tz TIMESTAMPTZ)")
        # a zoneless TIMESTAMP is read as UTC: written as UTC here, whatever this machine's zone
        db.execute("INSERT INTO etl_runs VALUES (?, now() - INTERVAL 2 HOUR)", [(NOW - 5 * DAY).replace(tzinfo=None)])
    url = f"duckdb:///{path}"
    old = await ask(verified_agent(url, Freshness.column("etl_runs", "loaded_at", DAY)))
    assert old.staleness_warning and "5 days ago" in old.staleness_warning
    recent = await ask(verified_agent(url, Freshness.column("etl_runs", "loaded_tz", DAY)))
    assert recent.staleness_warning is None and 7100 < recent.meta["data_freshness"]["age_s"] < 7400


def test_postgres_timestamptz(postgres_url):
    import sqlalchemy as sa

    from pg_fresh import fresh_database

    with fresh_database(postgres_url, "baton_fresh") as url:
        engine = sa.create_engine(url)
        with engine.begin() as db:
            db.exec_driver_sql("CREATE TABLE orders (id int, amount numeric)")
            db.exec_driver_sql("INSERT INTO orders VALUES (1, 10), (2, 30), (3, 5)")
            db.exec_driver_sql("CREATE TABLE etl_runs (loaded_at timestamptz)")
            db.exec_driver_sql("INSERT INTO etl_runs VALUES (now() - interval '3 days 1 hour')")
        engine.dispose()
        # the test server's role is a superuser: allowed here, as --unsafe-allow-privileged-role would
        message = asyncio.run(ask(verified_agent(url, LOADED, allow_privileged_role=True)))
    assert message.staleness_warning and "3 days ago" in message.staleness_warning


# --- refused when configured ----------------------------------------------------------------------------------------

HOSTILE = [
    ("DELETE FROM etl_runs", "write_statement"),
    ("SELECT max(loaded_at) FROM etl_runs; DROP TABLE orders", "multiple_statements"),
    ("SELECT pg_read_file('/etc/passwd')", "dangerous_function"),
]


@pytest.mark.parametrize("url", ["sqlite:///{tmp}/shop.sqlite", "postgresql+psycopg://reader@localhost/shop",
                                 "duckdb:///{tmp}/shop.duckdb"])
@pytest.mark.parametrize(("sql", "rule"), HOSTILE)
def test_a_hostile_freshness_query_is_refused_when_the_connection_is_built(tmp_path, url, sql, rule):
    with pytest.raises(FreshnessQueryError) as refused:
        SQLConnection(url.format(tmp=tmp_path), freshness=Freshness(sql, DAY))
    assert refused.value.verdict.rule == rule and rule in str(refused.value)
    assert not list(tmp_path.iterdir())  # nothing was opened, not even a database file


def test_a_hostile_freshness_query_stops_the_workspace_before_it_opens(tmp_path):
    url = shop(tmp_path / "shop.sqlite", NOW)
    state = State.from_env(env={}, home=tmp_path / "home")
    with pytest.raises(FreshnessQueryError):
        open_database_workspace(url, None, state=state, freshness=Freshness("UPDATE etl_runs SET loaded_at = 1", DAY))


@pytest.mark.parametrize("bad", [
    lambda: Freshness("  ", DAY),
    lambda: Freshness("SELECT 1", dt.timedelta(0)),
    lambda: Freshness("SELECT 1", DAY, timeout_s=0),
    lambda: Freshness.column("etl_runs; DROP TABLE x", "loaded_at", DAY),
    lambda: parse_age("soon"),
    lambda: parse_age("0h"),
])
def test_malformed_settings_are_configuration_errors(bad):
    from baton.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        bad()


# --- failing or slow lookups never hurt an answer ---------------------------------------------------------------

class CountingConnection(SQLConnection):
    """A real connection that counts the freshness lookups it runs."""

    lookups = 0

    async def query(self, sql: str, **kw):
        if "etl_runs" in sql:
            self.lookups += 1
        return await super().query(sql, **kw)


async def test_a_failing_lookup_leaves_the_answer_alone_and_warns_the_log_once(tmp_path, caplog):
    url = shop(tmp_path / "shop.sqlite", None)  # etl_runs is empty: max() is NULL
    connection = CountingConnection(url, id="shop", freshness=Freshness("SELECT max(loaded_at) FROM etl_runs", DAY, cache_s=0))
    agent = SQLAgent(connection, present=False, verified=[VerifiedQuestion(QUESTION, COUNT, "sql")])
    with caplog.at_level(logging.DEBUG, logger=LOG):
        try:
            answers = [await agent.run(AgentContext(), question=QUESTION) for _ in range(3)]
        finally:
            await connection.aclose()
    for result in answers:
        assert result.status == "success" and result.ai_message is not None
        assert result.ai_message.staleness_warning is None and "data_freshness" not in result.ai_message.metadata
    warnings = [r for r in caplog.records if r.name == LOG and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "NULL" in warnings[0].getMessage()
    assert connection.lookups >= 2  # cache_s=0: it kept trying, and the log did not repeat itself


async def test_a_missing_table_is_a_failing_lookup_too(tmp_path, caplog):
    url = shop(tmp_path / "shop.sqlite", NOW)
    with caplog.at_level(logging.WARNING, logger=LOG):
        message = await ask(verified_agent(url, Freshness("SELECT max(finished_at) FROM loads", DAY)))
    assert message.staleness_warning is None and message.content
    assert any("loads" in r.getMessage() for r in caplog.records if r.name == LOG)


class HangingAfterFirstLookup(CountingConnection):
    """Answers its first freshness lookup, then never again (a database gone quiet)."""

    async def query(self, sql: str, **kw):
        if "etl_runs" in sql and self.lookups >= 1:
            self.lookups += 1
            await asyncio.Event().wait()  # never set: only the lookup's own bound ends it
        return await super().query(sql, **kw)


async def test_a_slow_lookup_is_cut_at_its_timeout_and_waited_for_once_at_most(tmp_path):
    url = shop(tmp_path / "shop.sqlite", NOW - 3 * DAY)
    endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT max(x) FROM n"
    agent = verified_agent(url, Freshness(endless, DAY, timeout_s=0.3))
    try:  # the engine cuts the endless lookup at 0.3 s: the answer comes, with no freshness (unknown)
        cut = await asyncio.wait_for(agent.run(AgentContext(), question=QUESTION), 10)
    finally:
        await agent.connection.aclose()
    assert cut.status == "success" and cut.ai_message is not None
    assert cut.ai_message.staleness_warning is None and "data_freshness" not in cut.ai_message.metadata

    # once a lookup has ended, no answer waits for the next one: the second lookup hangs for
    # good (bounded at timeout_s + 1 s = 61 s), and the answer still comes well inside 10 s
    connection = HangingAfterFirstLookup(url, id="shop", freshness=Freshness("SELECT max(loaded_at) FROM etl_runs", DAY,
                                                                             timeout_s=60, cache_s=0))
    agent = SQLAgent(connection, present=False, verified=[VerifiedQuestion(QUESTION, COUNT, "sql")])
    try:
        first = await asyncio.wait_for(agent.run(AgentContext(), question=QUESTION), 10)
        second = await asyncio.wait_for(agent.run(AgentContext(), question=QUESTION), 10)
    finally:
        await connection.aclose()
    assert connection.lookups == 2  # the second answer started a lookup and did not wait for it
    for result in (first, second):
        assert result.status == "success" and result.ai_message is not None
        assert result.ai_message.staleness_warning is not None  # 3 days old: the last known age still said


async def test_lookups_are_cached_and_shared_by_concurrent_answers(tmp_path):
    path = tmp_path / "shop.sqlite"
    url = shop(path, NOW - 3 * DAY)
    clock = [1000.0]
    connection = CountingConnection(url, id="shop")
    connection.freshness = FreshnessProbe(connection, Freshness("SELECT max(loaded_at) FROM etl_runs", DAY, cache_s=60),
                                          clock=lambda: clock[0])
    agent = SQLAgent(connection, present=False, verified=[VerifiedQuestion(QUESTION, COUNT, "sql")])
    try:
        burst = await asyncio.gather(*(agent.run(AgentContext(), question=QUESTION) for _ in range(6)))
        assert connection.lookups == 1
        assert all(r.ai_message and r.ai_message.meta["data_freshness"]["stale"] for r in burst)
        with sqlite3.connect(path) as db:  # a load lands
            db.execute("INSERT INTO etl_runs (loaded_at) VALUES (?)", (NOW.strftime("%Y-%m-%d %H:%M:%S"),))
        clock[0] += 30  # within cache_s: the last lookup stands
        cached = await agent.run(AgentContext(), question=QUESTION)
        assert connection.lookups == 1 and cached.ai_message and cached.ai_message.staleness_warning
        clock[0] += 31  # past cache_s: this answer uses what it knew and a lookup runs beside it
        await agent.run(AgentContext(), question=QUESTION)  # starts a lookup beside its own query
        for _ in range(50):  # it lands (maybe in time for that answer already): answers see the new load
            await asyncio.sleep(0.1)
            after = await agent.run(AgentContext(), question=QUESTION)
            if after.ai_message and after.ai_message.staleness_warning is None:
                break
        assert connection.lookups == 2 and after.ai_message and after.ai_message.staleness_warning is None
    finally:
        await connection.aclose()


# --- the workspace, the semantic layer and the command line ----------------------------------------------------------

async def test_workspace_answers_follow_ups_and_edited_sql_keep_the_warning(tmp_path):
    from baton.workspace.edited_sql import run_edited_sql

    url = shop(tmp_path / "shop.sqlite", NOW - 4 * DAY)
    state = State.from_env(env={}, home=tmp_path / "home")
    async with open_database_workspace(url, None, state=state, freshness=LOADED) as ws:
        await save_verified_question(ws, "Revenue by region", "SELECT region, SUM(amount) AS revenue FROM orders GROUP BY region")
        answer = await ws.answer("Revenue by region")
        top = await ws.answer("Show only the top 1", answer.session_id)  # a follow-up: new SQL, no model
        edited = await run_edited_sql(ws, answer.turn_id, "SELECT region FROM orders")
        turns = await ws.sessions.turns(ws.name, answer.session_id)
    assert answer.staleness_warning and "4 days ago" in answer.staleness_warning
    assert top.metadata.get("followup") and top.staleness_warning == answer.staleness_warning
    assert edited.staleness_warning == answer.staleness_warning
    assert [t.answer.staleness_warning for t in turns] == [answer.staleness_warning] * 3  # kept with the conversation


async def test_a_pipeline_answer_carries_its_stages_warning_once(tmp_path):
    from baton.pipeline import AgentStageRunner, ExecutionPlan, PipelineExecutor, PlanStage

    url = shop(tmp_path / "shop.sqlite", NOW - 3 * DAY)
    agent = verified_agent(url, LOADED)
    plan = ExecutionPlan("orders twice", [PlanStage("first", "query_database", QUESTION),
                                          PlanStage("second", "query_database", QUESTION, depends_on=["first"])])
    try:
        run = await PipelineExecutor(AgentStageRunner({"query_database": agent})).start(plan, AgentContext(user_question="q"))
    finally:
        await agent.connection.aclose()
    assert run.status == "complete" and run.message is not None
    assert run.message.staleness_warning and run.message.staleness_warning.count("last loaded 3 days ago") == 1


async def test_a_semantic_answer_says_it_too(tmp_path):
    from baton.demo.data import build_demo_database
    from baton.semantic.loading import demo_model_path

    build_demo_database(tmp_path / "finance.sqlite", sales_rows=200)
    state = State.from_env(env={}, home=tmp_path / "home")
    freshness = Freshness("SELECT datetime('now', '-2 days')", DAY)  # no load table in the demo: the query says it
    async with open_database_workspace(f"sqlite:///{tmp_path / 'finance.sqlite'}", None, state=state,
                                       semantic=demo_model_path(), freshness=freshness) as ws:
        answer = await ws.answer("What was Epson revenue by quarter in 2025?")
    assert answer.metadata["fast_path"] == "semantic_layer"
    assert answer.staleness_warning and "2 days ago" in answer.staleness_warning


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_MODEL", raising=False)
    monkeypatch.delenv("BATON_STATE_URL", raising=False)
    return tmp_path


def cli(*args):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_baton_ask_with_a_freshness_column_prints_the_warning(home):
    url = shop(home / "shop.sqlite", NOW - 3 * DAY)
    added = cli("verified", "add", "--database", url, QUESTION, COUNT)
    assert added.exit_code == 0, added.output
    asked = cli("ask", "--database", url, "--freshness-column", "etl_runs.loaded_at", "--max-data-age", "1d", QUESTION)
    assert asked.exit_code == 0, asked.output
    assert "The data was last loaded 3 days ago" in " ".join(asked.output.split())
    fresh = cli("ask", "--database", url, "--freshness-column", "etl_runs.loaded_at", "--max-data-age", "1w", QUESTION)
    assert fresh.exit_code == 0 and "last loaded" not in fresh.output


@pytest.mark.parametrize(("args", "says"), [
    (["--freshness-sql", "DELETE FROM etl_runs"], "write_statement"),
    (["--freshness-sql", "SELECT 1; SELECT 2"], "multiple_statements"),
    (["--freshness-column", "loaded_at"], "TABLE.COLUMN"),
    (["--freshness-column", "etl_runs.loaded_at", "--max-data-age", "soon"], "not an age"),
    (["--max-data-age", "1d"], "needs --freshness-sql"),
])
def test_baton_ask_refuses_an_unusable_freshness_setting_before_answering(home, args, says):
    url = shop(home / "shop.sqlite", NOW)
    refused = cli("ask", "--database", url, *args, QUESTION)
    assert refused.exit_code == 2 and says in " ".join(refused.output.split()), refused.output


# --- the pieces ---------------------------------------------------------------------------------------------------

def test_values_read_as_utc_times():
    utc = dt.datetime(2026, 11, 28, 4, 0, tzinfo=dt.UTC)
    assert as_utc("2026-11-28 04:00:00") == utc
    assert as_utc("2026-11-28T05:00:00+01:00") == utc
    assert as_utc(dt.datetime(2026, 11, 28, 4, 0)) == utc
    assert as_utc(dt.date(2026, 11, 28)) == utc.replace(hour=0)
    assert as_utc(utc.timestamp()) == utc and as_utc(int(utc.timestamp())) == utc
    for bad in (None, True, "yesterday", b"x"):
        with pytest.raises(ValueError):
            as_utc(bad)


def test_ages_read_and_said_like_a_person_would():
    assert parse_age("1d") == DAY and parse_age("1d12h") == dt.timedelta(hours=36) and parse_age("90s").seconds == 90
    assert parse_age("2w") == 14 * DAY and parse_age("30m") == dt.timedelta(minutes=30)
    said = {dt.timedelta(seconds=45): "45 seconds", dt.timedelta(minutes=90): "90 minutes", dt.timedelta(hours=30): "30 hours",
            DAY: "1 day", dt.timedelta(days=3, hours=4): "3 days", dt.timedelta(hours=1): "60 minutes"}
    assert {span: duration(span) for span in said} == said


def test_an_age_is_stale_only_past_its_limit():
    loaded = dt.datetime(2026, 11, 28, 4, 0, tzinfo=dt.UTC)
    assert DataAge(loaded, DAY, loaded + DAY).warning() is None
    assert DataAge(loaded, DAY, loaded - DAY).age == dt.timedelta(0)  # loaded "in the future": fresh
    assert DataAge(loaded, DAY, loaded + 3 * DAY).warning() == (
        "The data was last loaded 3 days ago (2026-11-28 04:00 UTC), older than this workspace's freshness limit of 1 day.")


def test_a_column_pair_is_quoted():
    assert Freshness.column("etl.runs", "loaded_at", DAY).sql == 'SELECT max("loaded_at") FROM "etl"."runs"'
