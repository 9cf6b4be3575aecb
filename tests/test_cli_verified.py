"""`baton verified list|add|remove`, `baton ask --database` checks, `baton sessions` and `baton sql`
help, with no model configured (issue 14, parts 2, 6 and 7)."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from typer.testing import CliRunner

from baton.cli import build_app
from baton.demo.data import build_demo_database


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path))
    monkeypatch.delenv("BATON_MODEL", raising=False)
    monkeypatch.delenv("BATON_STATE_URL", raising=False)
    build_demo_database(tmp_path / "demo" / "finance.sqlite", sales_rows=500)
    return tmp_path


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT NOT NULL, ordered_at TEXT NOT NULL, amount REAL NOT NULL);
            INSERT INTO orders VALUES (1, 'North', '2024-02-01', 10), (2, 'South', '2024-06-01', 30), (3, 'North', '2025-01-05', 5);
        """)
    return f"sqlite:///{path}"


def run(*args, stdin=None):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"}, input=stdin)


def test_list_add_ask_in_other_words_and_remove_on_the_demo(home):
    listed = run("verified", "list", "--json")
    assert listed.exit_code == 0, listed.output
    assert len(json.loads(listed.output)) == 10
    added = run("verified", "add", "How many Epson products are there?",
                "SELECT COUNT(*) AS products FROM products WHERE unit_id = 2", "--agent", "epson_finance")
    assert added.exit_code == 0, added.output
    asked = run("ask", "number of Epson products?")
    assert asked.exit_code == 0 and "no LLM call" in asked.output and re.search(r"\b4\b", asked.output)
    table = run("verified", "list")
    assert "How many Epson products are there?" in table.output and "1 time" in table.output
    removed = run("verified", "remove", "How many Epson products are there?")
    assert removed.exit_code == 0 and "removed" in removed.output
    assert "How many Epson products" not in run("verified", "list").output
    assert run("verified", "remove", "How many Epson products are there?").exit_code == 1


@pytest.mark.parametrize("sql,code,words", [
    ("DELETE FROM products", 1, "refused"),
    ("SELECT nope FROM products", 1, "refused"),
])
def test_add_refuses_sql_that_is_unsafe_or_does_not_run(home, sql, code, words):
    result = run("verified", "add", "Delete everything?", sql, "--agent", "epson_finance")
    assert result.exit_code == code and words in result.output and "Traceback" not in result.output
    assert "Delete everything" not in run("verified", "list").output
    assert sqlite3.connect(home / "demo" / "finance.sqlite").execute("SELECT COUNT(*) FROM products").fetchone()[0] == 12


def test_your_own_database_says_how_to_add_one_then_answers_with_a_year_slot(home, shop):
    first = run("ask", "--database", shop, "order amount by region in 2024")
    assert first.exit_code == 0 and "baton verified add" in first.output and "no verified questions yet" in first.output
    sql = ("SELECT region, SUM(amount) AS amount FROM orders WHERE ordered_at LIKE '2024-%' "
           "GROUP BY region ORDER BY amount DESC")
    added = run("verified", "add", "What was the order amount by region in 2024?", "-", "--slot", "year", "--database", shop, stdin=sql)
    assert added.exit_code == 0, added.output
    asked = run("ask", "--database", shop, "order amount per region for 2025", "--json")
    answer = json.loads(asked.output)
    assert answer["data"] == [{"region": "North", "amount": 5.0}] and answer["metadata"]["llm_calls"] == 0


@pytest.mark.parametrize("url,words", [
    ("not a url", "Not a database URL"),
    ("sqlite:////nonexistent/folder/shop.sqlite", "No database file"),
    ("postgresql+psycopg://user:secret@127.0.0.1:1/shop", "Cannot reach the database server at 127.0.0.1:1"),
])
def test_a_database_that_cannot_be_used_is_one_line_and_exit_2(home, url, words):
    result = run("ask", "--database", url, "anything")
    assert result.exit_code == 2 and words in result.output
    assert "Traceback" not in result.output and "secret" not in result.output and len(result.output.strip().splitlines()) <= 3
    assert run("verified", "list", "--database", url).exit_code == 2


def test_a_database_that_does_not_exist_on_a_real_server(home, postgres_url):
    missing = postgres_url.rsplit("/", 1)[0] + "/baton_no_such_database_14"
    result = run("ask", "--database", missing, "anything")
    assert result.exit_code == 2 and "No such database" in result.output and "Traceback" not in result.output


def test_sessions_says_when_there_are_none_and_counts_turns_in_words(home):
    empty = run("sessions")
    assert empty.exit_code == 0 and "No conversations yet" in empty.output
    run("ask", "What was Epson revenue by month in 2025?")
    listed = run("sessions")
    assert " 1 turn " in listed.output and "1 turns" not in listed.output


def test_sql_help_says_it_only_checks():
    result = run("--help")
    assert "Check and run" not in result.output and "Check SQL safely" in result.output


def test_serve_refuses_an_unusable_database_and_says_where_it_serves(home, shop, monkeypatch):
    import baton.cli.serving as serving

    served = []
    monkeypatch.setattr(serving, "serve_app", lambda app, host, port, *rest, **options: served.append((host, port)))
    refused = run("serve", "--database", "sqlite:////nonexistent/shop.sqlite")
    assert refused.exit_code == 2 and "No database file" in refused.output and served == []
    monkeypatch.setenv("BATON_API_KEYS", "k-123=database")
    started = run("serve", "--database", shop, "--port", "8899")
    assert started.exit_code == 0, started.output
    assert "Serving on http://127.0.0.1:8899/" in started.output and "k-123" not in started.output
    assert served == [("127.0.0.1", 8899)]


def test_an_empty_database_is_a_warning_not_a_refusal(home, tmp_path):
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    result = run("ask", "--database", f"sqlite:///{empty}", "anything")
    assert result.exit_code == 0 and "no table this login can read" in result.output


UNITS = "unit:unit_id=Pokemon:1,Epson:2,Roadshows:3,General:4"
BY_PRODUCT = ("SELECT p.name AS product, ROUND(SUM(r.revenue_cents) / 100.0, 2) AS revenue FROM monthly_revenue r "
              "JOIN products p ON p.id = r.product_id WHERE r.unit_id = 1 AND r.month LIKE '2024-%' "
              "GROUP BY p.name ORDER BY revenue DESC")


def _answer(result):
    assert result.exit_code == 0, result.output
    return json.JSONDecoder().raw_decode(result.output[result.output.index("{"):])[0]


def test_a_choice_slot_from_the_command_line_answers_another_unit_with_its_rows(home):
    added = run("verified", "add", "What was Pokemon revenue by product in 2024?", BY_PRODUCT, "--slot", UNITS,
                "--agent", "general_finance")
    assert added.exit_code == 0, added.output
    stored = next(v for v in json.loads(run("verified", "list", "--json").output) if v["source"] == "operator")
    assert stored["slots"] == [{"name": "unit", "kind": "choice", "default": "Pokemon", "column": "unit_id",
                                "choices": {"Pokemon": "1", "Epson": "2", "Roadshows": "3", "General": "4"}}]
    answer = _answer(run("ask", "Epson revenue by product in 2024", "--json"))
    with sqlite3.connect(home / "demo" / "finance.sqlite") as db:
        epson = [{"product": p, "revenue": r} for p, r in db.execute(BY_PRODUCT.replace("unit_id = 1", "unit_id = 2"))]
    assert answer["data"] == epson and len(epson) == 4
    assert answer["metadata"]["fast_path"] == "verified_question" and answer["metadata"]["llm_calls"] == 0
    canon = _answer(run("ask", "Canon revenue by product in 2024", "--json"))  # not a declared choice: no verified rows
    assert canon["data"] is None and canon["query"] is None and canon["metadata"].get("fast_path") != "verified_question"
    assert canon["suggested_followups"]  # the demo's metrics say what they can answer instead


@pytest.mark.parametrize("slot,words", [
    ("unit_id=Pokemon:1' OR 1=1 --,Epson:2", "letters, digits"),
    ("unit_id=Pokemon:1,Epson:2 OR 1=1", "letters, digits"),
    ("unit_id=Pokemon:1,Ep'son:2", "one word"),
    ("unit_id=Pokemon:1,Epson:2\n; DROP TABLE products", "letters, digits"),
    ("unit_id=Pokemon:1,Ep\x00son:2", "one word"),
    ("unit_id=Pokemon:1,Epson:2,epson:3", "repeats"),
    ("unit_id=" + ",".join(f"W{i}:{i}" for i in range(51)) + ",Pokemon:1", "at most 50"),
    ("r.unit_id=Pokemon:1,Epson:2", "without its table"),
    ("unit_id=Epson:2,Canon:5", "must name exactly one"),
    ("unit_id=Pokemon:1,,Epson:2", "WORD or WORD:LITERAL"),
])
def test_hostile_or_malformed_choices_are_refused_and_nothing_is_stored(home, slot, words):
    result = run("verified", "add", "What was Pokemon revenue by product in 2024?", BY_PRODUCT, "--slot", slot,
                 "--agent", "general_finance")
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert len(json.loads(run("verified", "list", "--json").output)) == 10


def test_a_choice_the_sql_does_not_compare_is_refused_when_checked(home):
    result = run("verified", "add", "What was Pokemon revenue by product in 2024?", BY_PRODUCT,
                 "--slot", "unit_id=Pokemon,Epson", "--agent", "general_finance")  # the SQL says unit_id = 1, not 'Pokemon'
    assert result.exit_code == 1 and "refused" in result.output and "unit_id = Pokemon" in result.output
    assert len(json.loads(run("verified", "list", "--json").output)) == 10


def test_every_choice_is_checked_and_run_once_before_it_is_stored(home, monkeypatch):
    import baton.specialists.sql.validation as validation

    ran, real = [], validation.validate_and_run

    async def recording(sql, **kwargs):
        ran.append(sql)
        return await real(sql, **kwargs)

    monkeypatch.setattr(validation, "validate_and_run", recording)
    added = run("verified", "add", "What was Pokemon revenue by product in 2024?", BY_PRODUCT, "--slot", UNITS,
                "--agent", "general_finance")
    assert added.exit_code == 0, added.output
    assert [re.search(r"unit_id = (\d)", sql).group(1) for sql in ran] == ["1", "2", "3", "4"]
