"""Tools from function signatures: schema from types and docstrings, arguments validated with
pydantic, sync bodies in a worker thread (baton.tools.function)."""

from __future__ import annotations

import asyncio
import enum
import threading
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from baton import tool
from baton.errors import ConfigurationError, ToolArgumentsError
from baton.llm.openai_compat import to_openai_tools as openai_tools
from baton.llm.testing import ScriptedModel, tool_call
from baton.loop import run_loop
from baton.messages import LLMResponse, Message, Tool, ToolParameter
from baton.tools import FunctionTool, ToolOutput

WINDOW = 100_000


class Region(enum.Enum):
    NORTH = "north"
    SOUTH = "south"


class Period(BaseModel):
    year: int
    quarter: int | None = None


def revenue(region: Region, period: Period, metric: Literal["gross", "net"] = "net", top: int = 5,
            tags: list[str] | None = None) -> dict:
    """Revenue of one region in one period.

    Used by the finance team.

    Args:
        region: Which sales region.
        period: The year, and optionally the quarter.
        metric (str): Gross or net revenue,
            net by default.
        top: How many products to list.

    Returns:
        The figures.
    """
    return {"region": region.value, "year": period.year, "metric": metric, "top": top, "tags": tags}


def test_schema_comes_from_types_and_the_docstring():
    made = tool(revenue)
    spec = made.spec
    assert spec.name == "revenue"
    assert spec.description == "Revenue of one region in one period.\n\nUsed by the finance team."
    schema = spec.to_json_schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["region", "period"]
    props = schema["properties"]
    assert props["metric"] == {"default": "net", "description": "Gross or net revenue, net by default.",
                               "enum": ["gross", "net"], "type": "string"}
    assert props["top"] == {"default": 5, "description": "How many products to list.", "type": "integer"}
    assert props["tags"]["anyOf"] == [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}]
    assert props["region"]["description"] == "Which sales region."
    assert "Period" in schema["$defs"] and "Region" in schema["$defs"]
    assert "title" not in str(schema)  # titles repeat the names and cost tokens
    assert [(p.name, p.type, p.required) for p in spec.parameters] == [
        ("region", "object", True), ("period", "object", True), ("metric", "string", False),
        ("top", "integer", False), ("tags", "array", False)]
    wire = openai_tools([spec])[0]["function"]  # what a provider sends is that schema
    assert wire["parameters"] == schema and wire["description"] == spec.description


@pytest.mark.parametrize("doc", [
    """Look a key up.

    :param key: The key to look up,
        exactly as stored.
    :param int limit: At most this many.
    :returns: the values
    """,
    """Look a key up.

    Parameters
    ----------
    key : str
        The key to look up,
        exactly as stored.
    limit : int, optional
        At most this many.

    Returns
    -------
    str
    """,
])
def test_rest_and_numpy_docstrings_describe_the_parameters(doc):
    def lookup(key: str, limit: int = 3) -> str:
        return key

    lookup.__doc__ = doc
    props = tool(lookup).spec.to_json_schema()["properties"]
    assert tool(lookup).spec.description == "Look a key up."
    assert props["key"]["description"] == "The key to look up, exactly as stored."
    assert props["limit"]["description"] == "At most this many."


def test_annotated_fields_and_explicit_names_win():
    @tool(name="find-orders", description="Orders of a customer.", sequential_only=True)
    def find(customer: Annotated[str, Field(description="The customer's id", min_length=3)]) -> str:
        return customer

    assert find.spec.name == "find-orders" and find.spec.sequential_only
    assert find.spec.description == "Orders of a customer."
    assert find.spec.to_json_schema()["properties"]["customer"] == {
        "description": "The customer's id", "minLength": 3, "type": "string"}


async def test_arguments_are_validated_and_coerced():
    made = tool(revenue)
    text = await made({"region": "north", "period": {"year": "2025"}, "top": "3"})
    assert text == '{"region": "north", "year": 2025, "metric": "net", "top": 3, "tags": null}'
    with pytest.raises(ToolArgumentsError) as caught:
        await made({"region": "west", "period": {"quarter": 2}, "metric": "gross", "top": "many", "colour": "red"})
    message = str(caught.value)
    assert caught.value.tool_name == "revenue"
    for problem in ("region: Input should be 'north' or 'south'", "missing required parameter period.year",
                    "top: Input should be a valid integer", "unknown parameter colour",
                    "'revenue' takes: region (object, required): Which sales region."):
        assert problem in message, problem


async def test_a_bad_call_is_fed_back_and_the_function_never_runs():
    ran: list[int] = []

    @tool
    def double(n: int) -> int:
        """Twice n."""
        ran.append(n)
        return n * 2

    model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("double", {"n": "lots"}, id="c1")]),
        LLMResponse(tool_calls=[tool_call("double", {"n": 21}, id="c2")]),
        "42",
    ])
    result = await run_loop(model, [Message.user("double 21")], [double], context_window=WINDOW)
    bad, good = result.tool_calls
    assert isinstance(bad.error, ToolArgumentsError) and bad.error.call_id == "c1"
    assert bad.output.text.startswith("Error (ToolArgumentsError): 'double' was called with invalid arguments: n:")
    assert good.output.text == "42" and ran == [21]


async def test_a_sync_tool_runs_in_a_worker_thread_and_does_not_block_the_loop():
    loop_thread = threading.get_ident()
    released = threading.Event()
    seen: dict[str, int] = {}

    @tool
    def wait_for_release(key: str) -> str:
        """Blocks until the async tool of the same turn has run."""
        seen["sync"] = threading.get_ident()
        if not released.wait(timeout=30):  # on the loop's thread this would wait forever: the other call never runs
            return "never released"
        return "released"

    @tool
    async def release(key: str) -> str:
        """Releases the waiting tool."""
        seen["async"] = threading.get_ident()
        await asyncio.sleep(0)
        released.set()
        return "done"

    model = ScriptedModel([LLMResponse(tool_calls=[tool_call("wait_for_release", {"key": "a"}, id="w"),
                                                   tool_call("release", {"key": "b"}, id="r")]), "ok"])
    result = await run_loop(model, [Message.user("go")], [wait_for_release, release], context_window=WINDOW)
    assert [r.output.text for r in result.tool_calls] == ["released", "done"]
    assert seen["async"] == loop_thread and seen["sync"] != loop_thread


def test_functions_that_cannot_be_described_are_refused():
    def untyped(key, limit: int = 1) -> str:
        return key

    def star(*keys: str) -> str:
        return ""

    def positional(key: str, /) -> str:
        return key

    with pytest.raises(ConfigurationError, match="'key' has no type annotation"):
        tool(untyped)
    with pytest.raises(ConfigurationError, match="ordinary or keyword-only"):
        tool(star)
    with pytest.raises(ConfigurationError, match="ordinary or keyword-only"):
        tool(positional)
    with pytest.raises(ConfigurationError, match="pass name="):
        tool(lambda key: key)
    with pytest.raises(ConfigurationError, match="pass name="):
        tool(name="drop table; --")(revenue)


async def test_parameter_names_pydantic_reserves_are_plain_parameters():
    @tool
    def odd(model_config: str, json: int, _private: bool = False) -> str:
        """Names that are attributes of pydantic models."""
        return f"{model_config}/{json}/{_private}"

    assert sorted(odd.spec.to_json_schema()["properties"]) == ["_private", "json", "model_config"]
    assert await odd({"model_config": "a", "json": 2, "_private": True}) == "a/2/True"


async def test_results_are_sent_as_text_or_json():
    @tool
    def rows(n: int) -> list:
        """Rows."""
        return [{"n": i} for i in range(n)]

    @tool
    def output(n: int) -> ToolOutput:
        """A payload for the program."""
        return ToolOutput("shown", payload={"n": n})

    class Answer(BaseModel):
        total: float

    @tool
    def typed(n: int) -> Answer:
        """A model."""
        return Answer(total=n / 2)

    assert await rows({"n": 2}) == '[{"n": 0}, {"n": 1}]'
    assert (await output({"n": 1})).payload == {"n": 1}
    assert await typed({"n": 3}) == '{"total":1.5}'


async def test_hand_written_specs_keep_working_and_check_the_declared_types():
    spec = Tool("limit_rows", "Rows up to a limit.", [ToolParameter("limit", "integer", "max rows"),
                                                      ToolParameter("mode", "string", "how", required=False, enum=["fast", "exact"])])
    seen: list[dict] = []
    made = FunctionTool(spec, lambda **kw: seen.append(kw) or "ok")
    assert await made({"limit": "7", "mode": None}) == "ok"
    assert seen == [{"limit": 7, "mode": None}]  # coerced; an optional parameter may be null
    with pytest.raises(ToolArgumentsError, match="limit: Input should be a valid integer"):
        await made({"limit": "seven"})
    with pytest.raises(ToolArgumentsError, match="mode: Input should be 'fast' or 'exact'"):
        await made({"limit": 1, "mode": "slow"})
    assert seen == [{"limit": 7, "mode": None}]
    assert spec.to_json_schema()["properties"]["limit"] == {"type": "integer", "description": "max rows"}


async def test_a_bound_method_is_a_tool_without_self():
    class Prices:
        rate = 3

        def convert(self, amount: int) -> int:
            """Convert an amount.

            Args:
                amount: In cents.
            """
            return amount * self.rate

    made = tool(Prices().convert)
    assert made.spec.to_json_schema()["properties"] == {"amount": {"description": "In cents.", "type": "integer"}}
    assert await made({"amount": 2}) == "6"
