import datetime as dt
from decimal import Decimal

import pandas as pd
import pytest

from baton.messages import Message, Tool, ToolCall, ToolParameter, add_usage
from baton.response import AIMessage, QueryResult, ResponseType, SourceDocument


def test_tool_json_schema_lists_required_parameters():
    tool = Tool(
        "query_database",
        "Run a question against the database",
        [
            ToolParameter("question", "string", "what to ask"),
            ToolParameter("limit", "integer", "max rows", required=False),
            ToolParameter("mode", "string", "how", enum=["fast", "exact"]),
        ],
    )
    schema = tool.to_json_schema()
    assert schema["type"] == "object"
    assert schema["required"] == ["question", "mode"]
    assert schema["properties"]["mode"]["enum"] == ["fast", "exact"]
    assert schema["properties"]["limit"]["type"] == "integer"


def test_message_constructors():
    call = ToolCall("c1", "sql", {"q": "x"})
    assert Message.tool(call, "ok").tool_call_id == "c1"
    assert Message.assistant("", [call]).tool_calls == [call]
    assert Message.assistant("hi").tool_calls is None


def test_add_usage_merges_counters():
    total = {"input_tokens": 3}
    add_usage(total, {"input_tokens": 2, "output_tokens": 5})
    assert total == {"input_tokens": 5, "output_tokens": 5}


def test_aimessage_round_trips_dataframes_dates_and_nested_values():
    frame = pd.DataFrame({"month": pd.to_datetime(["2026-01-01", "2026-02-01"]), "revenue": [1.5, 2.25]})
    message = AIMessage(
        content="Revenue by month",
        data={"pokemon_finance": frame, "epson_finance": [{"d": dt.date(2026, 3, 1), "x": Decimal("1.10")}]},
        source_documents=[SourceDocument("docs/a.md", "text", chunk_id="3", score=0.5)],
        results=QueryResult(["a"], [[1]], ["INTEGER"], truncated=True),
        response_type=ResponseType.SQL_RESULT,
        insights=[{"kind": "top", "share": 0.4}],
        images=[b"\x89PNG"],
    )
    back = AIMessage.from_json(message.to_json())
    pd.testing.assert_frame_equal(back.data["pokemon_finance"], frame)
    assert back.data["epson_finance"] == [{"d": dt.date(2026, 3, 1), "x": Decimal("1.10")}]
    assert back.source_documents[0].chunk_id == "3"
    assert back.results.truncated and back.results.row_count == 1
    assert back.response_type is ResponseType.SQL_RESULT
    assert back.images == [b"\x89PNG"]
    assert back.created_at == message.created_at
    assert back.output == "Revenue by month"


def test_aimessage_rejects_unknown_fields():
    with pytest.raises(ValueError, match="unknown AIMessage fields"):
        AIMessage.from_dict({"content": "x", "bogus": 1})


def test_copy_never_touches_the_original():
    original = AIMessage(content="a", data=[{"x": 1}], metadata={"k": 1})
    clone = original.copy(session_id="s2")
    clone.metadata["k"] = 2
    clone.data[0]["x"] = 9
    assert original.metadata == {"k": 1} and original.data == [{"x": 1}] and original.session_id is None


def test_rich_content_rule():
    assert not AIMessage(content="text only").has_rich_content
    assert AIMessage(data=[]).has_rich_content
    assert AIMessage(code="SELECT 1").has_rich_content


def test_notebook_html_shows_table_and_sql():
    html = AIMessage(content="<b>", data=[{"a": 1}], query="SELECT 1")._repr_html_()
    assert "&lt;b&gt;" in html and "<td>1</td>" in html and "SELECT 1" in html


def test_user_dicts_with_a_type_key_and_unusual_driver_values_round_trip():
    import ipaddress

    message = AIMessage(data=[{"payload": {"$type": "Order", "id": 7}, "ip": ipaddress.ip_address("10.0.0.1")}])
    back = AIMessage.from_json(message.to_json())
    assert back.data == [{"payload": {"$type": "Order", "id": 7}, "ip": "10.0.0.1"}]


def test_unreadable_answers_raise_a_typed_error():
    from baton.errors import BatonError

    with pytest.raises(BatonError, match="unknown tagged JSON value"):
        AIMessage.from_dict({"data": {"$type": "nope"}})
