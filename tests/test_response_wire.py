"""The answer's wire format: JSON written by earlier versions (stored session turns, durable
pipeline state) still loads to the same values, and today's JSON round-trips exactly."""

import datetime as dt
import json
from decimal import Decimal

import pandas as pd
import pytest

from baton.response import AIMessage, AnswerFormatError, QueryResult, ResponseType, SourceDocument

# Written by the hand-rolled serialiser before pydantic (and before ``knowledge_sources`` was
# folded into ``source_documents``): every tag it wrote, a user's dict with a "$type" key,
# and the duplicated source list.
OLD_ANSWER = r"""
{"content": "Revenue by month", "data": {"finance": {"$type": "dataframe", "columns": ["month", "revenue"],
  "dtypes": ["datetime64[ns]", "float64"],
  "rows": [[{"$type": "datetime", "value": "2026-01-01T00:00:00"}, 1.5], [{"$type": "datetime", "value": "2026-02-01T00:00:00"}, 2.25]]},
  "ledger": [{"day": {"$type": "date", "value": "2026-03-01"}, "amount": {"$type": "decimal", "value": "1.10"},
              "blob": {"$type": "bytes", "value": "iVBORw=="}, "ratio": {"$type": "float", "value": "nan"},
              "at": {"$type": "time", "value": "09:30:00"}, "took": {"$type": "timedelta", "value": 90.0},
              "payload": {"$type": "dict", "value": {"$type": "Order", "id": 7}}}]},
 "artifacts": [], "images": [{"$type": "bytes", "value": "iVBORw=="}], "code": null,
 "source_documents": [{"source": "docs/a.md", "content": "text", "chunk_id": "3", "score": 0.5, "metadata": {}}],
 "metadata": {"mode": "synthesis", "agent_errors": [{"agent": "sql", "error_type": "Timeout", "error": "slow"}]},
 "session_id": "s1", "turn_id": "t1", "input": "revenue?", "query": "SELECT 1", "query_explanation": null,
 "results": {"columns": ["a"], "rows": [[{"$type": "decimal", "value": "2.50"}]], "column_types": ["NUMERIC"],
             "truncated": true, "execution_ms": 4.0},
 "viz_type": "bar", "viz_config": {}, "knowledge_sources": [{"source": "docs/a.md", "content": "text", "chunk_id": "3",
 "score": 0.5, "metadata": {}}, {"source": "docs/b.md", "content": "", "chunk_id": null, "score": null, "metadata": {}}],
 "error": null, "workflow_id": "w1", "token_usage": {"input_tokens": 3}, "llm_provider": "", "llm_model": "",
 "response_type": "sql_result", "tool_call_log": [], "suggested_followups": ["by region"], "insights": [],
 "context_usage_pct": 0, "staleness_warning": null,
 "created_at": {"$type": "datetime", "value": "2026-04-01T12:00:00+00:00"}, "error_code": null, "partial": false}
"""


def test_an_answer_written_by_the_old_serialiser_loads_to_the_same_values():
    back = AIMessage.from_json(OLD_ANSWER)
    frame = back.data["finance"]
    expected = pd.DataFrame({"month": pd.to_datetime(["2026-01-01", "2026-02-01"]), "revenue": [1.5, 2.25]})
    expected["month"] = expected["month"].astype("datetime64[ns]")  # the dtype the old JSON names
    pd.testing.assert_frame_equal(frame, expected)
    [row] = back.data["ledger"]
    assert row["day"] == dt.date(2026, 3, 1) and row["amount"] == Decimal("1.10") and str(row["amount"]) == "1.10"
    assert row["blob"] == b"\x89PNG" and row["ratio"] != row["ratio"]
    assert row["at"] == dt.time(9, 30) and row["took"] == dt.timedelta(seconds=90)
    assert row["payload"] == {"$type": "Order", "id": 7}
    assert back.images == [b"\x89PNG"]
    assert back.results == QueryResult(["a"], [[Decimal("2.50")]], ["NUMERIC"], truncated=True, execution_ms=4.0)
    assert back.created_at == dt.datetime(2026, 4, 1, 12, tzinfo=dt.UTC) and back.created_at.tzinfo == dt.UTC
    assert back.response_type is ResponseType.SQL_RESULT
    # the dropped name joins the kept one, each source once
    assert [d.source for d in back.source_documents] == ["docs/a.md", "docs/b.md"]
    assert back.meta["agent_errors"] == [{"agent": "sql", "error_type": "Timeout", "error": "slow"}]


def test_todays_json_is_the_old_wire_format_and_round_trips_exactly():
    old = json.loads(OLD_ANSWER)
    back = AIMessage.from_dict(old)
    again = json.loads(back.to_json())
    assert again["data"] == old["data"] and again["results"] == old["results"]
    assert again["created_at"] == old["created_at"] and again["images"] == old["images"]
    assert "knowledge_sources" not in again
    assert AIMessage.from_dict(again).to_dict() == again


def test_a_table_given_alone_defines_the_pages_data():
    table = QueryResult(["region", "n"], [["north", 3]], ["TEXT", "INTEGER"])
    message = AIMessage(results=table)
    assert message.data == [{"region": "north", "n": 3}]
    back = AIMessage.from_json(message.to_json())
    assert back == message and back.results == table


def test_malformed_tagged_values_and_typed_fields_raise_the_typed_error():
    with pytest.raises(AnswerFormatError, match="malformed tagged JSON value 'date'"):
        AIMessage.from_dict({"data": {"$type": "date"}})
    with pytest.raises(AnswerFormatError, match="bad date"):
        AIMessage.from_dict({"data": {"$type": "date", "value": "not a date"}})
    with pytest.raises(AnswerFormatError, match="unreadable AIMessage"):
        AIMessage.from_dict({"response_type": "poem"})
    with pytest.raises(AnswerFormatError, match="unreadable AIMessage"):
        AIMessage.from_dict({"source_documents": [{"content": "no source"}]})


def test_sources_round_trip_as_typed_documents():
    message = AIMessage(source_documents=[SourceDocument("a.md", "x", metadata={"when": dt.date(2026, 1, 2)})])
    back = AIMessage.from_json(message.to_json())
    assert back.source_documents == message.source_documents


async def test_an_answer_that_leaned_on_a_stale_learning_says_so(tmp_path):
    """End to end: a learning not corroborated for a full stale window goes into the bundle,
    the SQL agent answers with it, and the answer carries ``staleness_warning`` (kept in JSON)."""
    import sqlite3
    import time

    from baton.agents import AgentContext
    from baton.llm.testing import ScriptedModel, tool_call
    from baton.memory import MemoryStore, Principal, TrustedAuthenticator, ingest_learnings
    from baton.memory.bridge import SQLMemory
    from baton.memory.model import Provenance
    from baton.messages import LLMResponse
    from baton.specialists.sql.agent import SQLAgent
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.learnings import ExtractedLearning

    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as raw:
        raw.execute("CREATE TABLE customers (id INTEGER, city TEXT)")
        raw.executemany("INSERT INTO customers VALUES (?, ?)", [(1, "Oslo"), (2, "Lima")])
    now = time.time()
    clock = [now - 45 * 86400]  # the learning was last confirmed 45 days ago: past the 30-day window
    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}", authenticator=TrustedAuthenticator(),
                        clock=lambda: clock[0])
    scope = store.open(Principal("acme"))
    connection = SQLConnection(f"sqlite:///{db}", id="shop")
    ingest_learnings(scope, [ExtractedLearning("table_preference", "Customers live in the customers table",
                                               tables=["customers"], connection_id="shop", entity="customer",
                                               value="customers")],
                     provenance=Provenance("validation"))
    clock[0] = now
    model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT city FROM customers ORDER BY city"})]),
        "Two cities.",
    ])
    agent = SQLAgent(connection, memory=SQLMemory(store, scope))
    result = await agent.run(AgentContext(llm_router=model), question="Which cities do customers live in?")
    assert result.status == "success", result.error
    message = result.ai_message
    assert message.staleness_warning and "not confirmed in 45 days" in message.staleness_warning
    assert "customers table" in message.staleness_warning and message.metadata["stale_memory"]
    assert AIMessage.from_json(message.to_json()).staleness_warning == message.staleness_warning


def test_the_cli_shows_the_staleness_warning():
    import io

    from rich.console import Console

    from baton.cli.render import print_answer

    out = io.StringIO()
    print_answer(Console(file=out, width=200), AIMessage(content="Two cities.", staleness_warning="May be out of date: [x]"))
    assert "May be out of date: [x]" in out.getvalue()
