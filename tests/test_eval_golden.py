"""Golden sets: the JSONL format and its errors, the Spider and BIRD importers (hostile
``db_id`` paths included), and a database workspace's verified questions from its memory."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from baton.evaluation import GoldenSetError, Tolerance, load_bird, load_golden_set, load_jsonl, load_spider, verified_questions
from baton.evaluation.golden import sqlite_url


def write(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_jsonl_reads_every_field(tmp_path):
    path = write(tmp_path / "set.jsonl", [
        "# a comment, then a blank line",
        "",
        {"id": "q1", "question": " How many? ", "sql": "SELECT 1", "specialist": "sales", "ordered": True, "tags": ["a", "b"],
         "tolerance": 0.01, "database": "shop.sqlite"},
        {"question": "Rows as objects", "rows": [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}], "specialist": ["sales", "docs"],
         "tolerance": {"rel": 1e-3}},
        {"id": 7, "question": "Only routing", "specialist": "docs", "database": "postgresql+psycopg://u@h/db"},
    ])
    golden = load_jsonl(path)
    q1, q2, q3 = golden.questions
    assert golden.name == "set" and golden.source == str(path)
    assert (q1.id, q1.question, q1.sql, q1.specialists, q1.ordered, q1.tags) == ("q1", "How many?", "SELECT 1", ("sales",), True, ("a", "b"))
    assert q1.tolerance == Tolerance(abs=0.01, rel=Tolerance().rel)
    assert q1.database == sqlite_url(tmp_path / "shop.sqlite")  # relative to the file
    assert q2.id == "set:4" and q2.rows == ((1, "a"), (2, "b")) and q2.specialists == ("sales", "docs") and q2.ordered is None
    assert q2.tolerance == Tolerance(abs=Tolerance().abs, rel=1e-3)
    assert q3.id == "7" and not q3.expects_result and q3.database == "postgresql+psycopg://u@h/db"

    again = tmp_path / "again.jsonl"
    golden.write_jsonl(again)
    assert [q.to_dict() for q in load_jsonl(again).questions] == [q.to_dict() for q in golden.questions]


@pytest.mark.parametrize("line, message", [
    ("{not json", "set.jsonl:1: not valid JSON"),
    ('["a list"]', "expected a JSON object"),
    ('{"question": "q"}', "needs 'sql', 'rows' or 'specialist'"),
    ('{"question": "", "sql": "SELECT 1"}', "'question' must be a non-empty string"),
    ('{"question": "q", "sql": "SELECT 1", "colour": "red"}', "unknown field(s) ['colour']"),
    ('{"question": "q", "sql": "SELECT 1", "ordered": "yes"}', "'ordered' must be true, false or null"),
    ('{"question": "q", "sql": "SELECT 1", "tolerance": -1}', "must not be negative"),
    ('{"question": "q", "sql": "SELECT 1", "tolerance": {"abs": "x"}}', "must be numbers"),
    ('{"question": "q", "rows": "1,2"}', "'rows' must be a list of rows"),
    ('{"question": "q", "rows": [1, 2]}', "each row must be a list of values or an object"),
    ('{"question": "q", "specialist": 3}', "'specialist' must be a string or a list of strings"),
])
def test_a_malformed_line_is_an_error_naming_the_file_and_line(tmp_path, line, message):
    path = write(tmp_path / "set.jsonl", [line])
    with pytest.raises(GoldenSetError) as error:
        load_jsonl(path)
    assert message in str(error.value) and "set.jsonl:1" in str(error.value)


def test_duplicate_ids_and_empty_sets_are_errors(tmp_path):
    with pytest.raises(GoldenSetError, match="the id 'a' appears twice"):
        load_jsonl(write(tmp_path / "dup.jsonl", [{"id": "a", "question": "q", "sql": "S"}, {"id": "a", "question": "r", "sql": "S"}]))
    with pytest.raises(GoldenSetError, match="has no questions"):
        load_jsonl(write(tmp_path / "empty.jsonl", ["# nothing"]))
    with pytest.raises(GoldenSetError, match="does not exist"):
        load_golden_set(tmp_path / "missing.jsonl")
    with pytest.raises(GoldenSetError, match="a .jsonl file, or a Spider/BIRD .json file"):
        load_golden_set(write(tmp_path / "set.csv", ["a,b"]))


def _sqlite(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")


def test_bird_puts_the_evidence_in_the_question_and_the_difficulty_in_the_tags(tmp_path):
    _sqlite(tmp_path / "dev_databases" / "shop" / "shop.sqlite")
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps([
        {"question_id": 11, "db_id": "shop", "question": "How many big orders?", "evidence": "big refers to a > 10",
         "SQL": "SELECT COUNT(*) FROM t WHERE a > 10", "difficulty": "simple"},
        {"question_id": 12, "db_id": "shop", "question": "All of them?", "evidence": "", "SQL": "SELECT COUNT(*) FROM t"},
    ]))
    golden = load_golden_set(dev)
    first, second = golden.questions
    assert golden.source == f"bird:{dev}"
    assert first.id == "11" and first.question == "How many big orders?\n\nHint: big refers to a > 10"
    assert first.tags == ("shop", "simple") and first.database == sqlite_url(tmp_path / "dev_databases" / "shop" / "shop.sqlite")
    assert second.question == "All of them?" and second.tags == ("shop",)
    assert load_bird(dev, databases=tmp_path / "dev_databases").questions == golden.questions


@pytest.mark.parametrize("db_id", ["../../etc", "a/b", "..", "", 5])
def test_a_db_id_is_a_plain_name_never_a_path(tmp_path, db_id):
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps([{"db_id": db_id, "question": "q", "query": "SELECT 1"}]))
    with pytest.raises(GoldenSetError, match="'db_id' must be a plain name"):
        load_spider(dev)


def test_spider_needs_its_databases_and_its_fields(tmp_path):
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps([{"db_id": "nowhere", "question": "q", "query": "SELECT 1"}]))
    with pytest.raises(GoldenSetError, match=r"nowhere\.sqlite does not exist"):
        load_golden_set(dev)
    _sqlite(tmp_path / "database" / "nowhere" / "nowhere.sqlite")
    dev.write_text(json.dumps([{"db_id": "nowhere", "question": "q"}]))
    with pytest.raises(GoldenSetError, match="neither Spider"):
        load_golden_set(dev)
    with pytest.raises(GoldenSetError, match="'query' must be a non-empty string"):
        load_spider(dev)
    dev.write_text("{}")
    with pytest.raises(GoldenSetError, match="non-empty JSON list"):
        load_spider(dev)


def test_a_database_workspaces_verified_questions_are_its_fresh_benchmarks(tmp_path):
    from baton.memory import Provenance, RecordDraft
    from baton.memory.feedback import question_key
    from baton.state.location import State
    from baton.workspace.database import open_database_workspace

    database = tmp_path / "shop.sqlite"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER, amount REAL)")
    ws = open_database_workspace(sqlite_url(database), None, state=State.from_env(env={}, home=tmp_path / "home"))

    def benchmark(question: str, sql: str):
        scope = ws.memory_scope()
        return ws.memory.remember(scope, RecordDraft(
            "benchmark", question, entity="question", attribute=question_key(question), scope="connection:database",
            value=sql, category="benchmark", connection_id="database", verified=True,
            provenance=Provenance("feedback"), data={"question": question, "sql": sql, "agent": "database"}))

    async def main():
        async with ws:
            benchmark("How many orders are there?", "SELECT COUNT(*) FROM orders")
            stale = benchmark("What is the total amount?", "SELECT SUM(amount) FROM orders")
            ws.memory.flag_stale(ws.memory_scope(), stale.record.id, "the user said it was wrong")
            benchmark("how many orders are there", "SELECT COUNT(id) FROM orders")  # confirmed again: supersedes
            return verified_questions(ws)

    golden = asyncio.run(main())
    assert [q.question for q in golden.questions] == ["how many orders are there"]
    q = golden.questions[0]
    assert q.id == "verified:how-many-orders-are-there" and q.sql == "SELECT COUNT(id) FROM orders" and q.specialists == ("database",)
    assert golden.source == "workspace:database"
