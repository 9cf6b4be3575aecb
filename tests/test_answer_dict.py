"""``baton.answer_dict``: an answer's dict written in one pass is the pydantic adapter's, and
a message it cannot write is left to the adapter."""

import dataclasses
import datetime as dt
import json
import warnings
from decimal import Decimal

import pandas as pd
import pytest

from baton.response import AIMessage, QueryResult, ResponseType, SourceDocument, _adapter, _writer


def adapter_dict(message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic warns of fields holding other types
        return _adapter().dump_python(message, mode="json")


def full_message() -> AIMessage:
    when = dt.datetime(2025, 3, 1, 12, 30, tzinfo=dt.UTC)
    rows = [["2025-01", 1037, 1.5, None, True], ["2025-02", Decimal("1.10"), float("nan"), dt.date(2025, 2, 1), b"\x00"]]
    return AIMessage(
        content="Revenue by month", data={"sales": [{"month": "2025-01", 3: when}], "frame": pd.DataFrame({"a": [1, 2]})},
        artifacts=[{"kind": "csv", "bytes": b"a,b"}], images=["x.png", ("a", 1)], code="print(1)",
        source_documents=[SourceDocument("doc.md", "text", "c1", 0.5, {"page": 2, "$type": "user"}),
                          SourceDocument("other.md", score=float("inf"))],
        metadata={"mode": "passthrough", "nested": {"when": when, "delta": dt.timedelta(seconds=90)}, "kind": ResponseType.TEXT},
        session_id="s1", input="q", query="SELECT 1", query_explanation="why",
        results=QueryResult(["month", "revenue", "f", "d", "b"], rows, ["TEXT", "INTEGER", "REAL", "DATE", "BLOB"], True, 0.25),
        viz_type="line", viz_config={"$schema": "vega", "data": {"values": [{"x": 1.0}]}}, error="e", workflow_id="w",
        token_usage={"input_tokens": 50}, llm_provider="p", llm_model="m", response_type=ResponseType.SQL_RESULT,
        tool_call_log=[{"tool": "sales", "arguments": {"question": "q"}}], suggested_followups=["more"],
        insights=[{"id": "i1", "value": Decimal("3")}], context_usage_pct=12, staleness_warning="old",
        created_at=when, error_code="partial", partial=True,
    )


@pytest.mark.parametrize("message", [AIMessage(), AIMessage(content="x", results=QueryResult(["a"], [[1]])), full_message()],
                         ids=["empty", "table", "full"])
def test_the_dict_is_the_adapters(message):
    fast = _writer()(message)
    assert fast is not None
    assert fast == adapter_dict(message)
    assert json.dumps(fast) == json.dumps(adapter_dict(message))  # the same keys in the same order
    assert message.to_dict() == fast


@pytest.mark.parametrize("changes", [
    {"content": 5}, {"session_id": 7}, {"response_type": "text"}, {"partial": 1}, {"context_usage_pct": True},
    {"token_usage": {"input_tokens": 1.5}}, {"suggested_followups": ("a",)}, {"results": QueryResult(["a"], [[1]], execution_ms=1)},
    {"results": QueryResult(["a"], [[1]], execution_ms=float("inf"))}, {"source_documents": [{"source": "x"}]},
    {"source_documents": [SourceDocument("x", chunk_id=3)]},
])
def test_a_field_holding_another_type_is_left_to_the_adapter(changes):
    message = dataclasses.replace(AIMessage(turn_id="t"), **changes)
    assert _writer()(message) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert message.to_dict() == adapter_dict(message)


def test_a_subclass_is_left_to_the_adapter():
    @dataclasses.dataclass
    class Mine(AIMessage):
        pass

    assert _writer()(Mine()) is None
