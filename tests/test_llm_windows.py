"""Context-window resolution: configuration -> provider metadata (cached, TTL) -> floor + WARNING."""

from __future__ import annotations

import asyncio
import logging

import pytest

from baton.errors import ConfigurationError
from baton.llm import Anthropic, ContextWindowResolver, LLMRouter, OpenAICompatible, ScriptedModel
from baton.llm.windows import parse_windows
from stub_llm_server import Reply, StubLLMServer, running_stub


@pytest.fixture
def stub():
    with running_stub() as server:
        yield server


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def served(stub: StubLLMServer, model: str = "served", **kw) -> OpenAICompatible:
    return OpenAICompatible(model, api_key="k", base_url=stub.openai_base_url, timeout=5, **kw)


def resolver(**kw) -> ContextWindowResolver:
    kw.setdefault("env", {})
    return ContextWindowResolver(**kw)


def model_lists(stub: StubLLMServer) -> int:
    return len(stub.requests_of("openai-models"))


async def test_configuration_beats_the_provider(stub):
    stub.openai_models = [{"id": "served", "object": "model", "created": 0, "owned_by": "vllm", "max_model_len": 32768}]
    r = resolver(env={"BATON_CONTEXT_WINDOWS": "served=16000"})
    assert await r.context_window(served(stub)) == 16000
    assert model_lists(stub) == 0  # configuration answered; nothing fetched


async def test_provider_qualified_key_and_model_attribute(stub):
    r = resolver(windows={"served": 16000, "openai-compatible:served": 12000})
    assert await r.context_window(served(stub)) == 12000
    assert await r.context_window(served(stub, context_window=6000)) == 6000


@pytest.mark.parametrize(
    "entry, window",
    [
        ({"max_model_len": 32768}, 32768),  # vLLM
        ({"context_length": 131072, "top_provider": {"context_length": 65536}}, 131072),  # OpenRouter
        ({"top_provider": {"context_length": 65536}}, 65536),
        ({"max_context_length": 8192}, 8192),  # LM Studio
        ({"meta": {"n_ctx": 4096, "n_ctx_train": 131072}}, 4096),  # llama.cpp: the server's, not the training ctx
    ],
)
async def test_provider_metadata_fields(stub, entry, window):
    stub.openai_models = [{"id": "served", "object": "model", "created": 0, "owned_by": "x", **entry}]
    assert await resolver().context_window(served(stub)) == window


async def test_anthropic_models_api(stub):
    stub.anthropic_models = [{"id": "claude-stub", "type": "model", "display_name": "Claude", "lifecycle": "active",
                              "created_at": "2025-01-01T00:00:00Z", "max_input_tokens": 200000}]
    claude = Anthropic("claude-stub", api_key="k", base_url=stub.base_url, timeout=5)
    assert await resolver().context_window(claude) == 200000


async def test_provider_beats_the_floor_and_is_fetched_once(stub, caplog):
    stub.openai_models = [{"id": "served", "object": "model", "created": 0, "owned_by": "x", "max_model_len": 32768}]
    r = resolver()
    with caplog.at_level(logging.WARNING, logger="baton.llm.windows"):
        windows = await asyncio.gather(*(r.context_window(served(stub)) for _ in range(10)))
        windows.append(await r.context_window(served(stub)))
    assert windows == [32768] * 11
    assert model_lists(stub) == 1 and r.fetch_count == 1
    assert not [rec for rec in caplog.records if rec.name == "baton.llm.windows"]  # not another test's garbage, collected here


async def test_floor_with_a_warning_naming_the_model(stub, caplog):
    stub.openai_models = [{"id": "other", "object": "model", "created": 0, "owned_by": "ollama"}]
    r = resolver(floor=8192)
    with caplog.at_level(logging.WARNING, logger="baton.llm.windows"):
        assert await r.context_window(served(stub, "llama-new")) == 8192
        assert await r.context_window(served(stub, "llama-new")) == 8192
    warnings = [rec for rec in caplog.records if rec.levelno == logging.WARNING]
    assert len(warnings) == 1  # loud once, not on every call
    assert "openai-compatible:llama-new" in warnings[0].getMessage() and "BATON_CONTEXT_WINDOWS" in warnings[0].getMessage()


class NoMetadata:
    """A ChatModel that knows nothing about its window (a user's own adapter)."""

    provider, model = "custom", "homegrown"

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None):
        raise NotImplementedError

    async def stream(self, messages, tools=None, *, temperature=None, max_tokens=None):
        raise NotImplementedError
        yield


async def test_models_without_metadata_get_the_floor(caplog):
    with caplog.at_level(logging.WARNING, logger="baton.llm.windows"):
        assert await resolver(floor=4000).context_window(NoMetadata()) == 4000
    assert "custom:homegrown" in caplog.text


async def test_test_doubles_report_their_own_window():
    assert await resolver().context_window(ScriptedModel([], context_window=32000)) == 32000


async def test_ttl_expiry_refetches(stub):
    stub.openai_models = [{"id": "served", "object": "model", "created": 0, "owned_by": "x", "max_model_len": 4096}]
    clock = Clock()
    r = resolver(ttl=600, clock=clock)
    assert await r.context_window(served(stub)) == 4096
    stub.openai_models[0]["max_model_len"] = 16384  # the operator restarted vLLM with a larger window
    clock.now += 599
    assert await r.context_window(served(stub)) == 4096
    assert model_lists(stub) == 1
    clock.now += 2
    assert await r.context_window(served(stub)) == 16384
    assert model_lists(stub) == 2


async def test_a_miss_refreshes_once_the_list_is_old_enough(stub):
    stub.openai_models = [{"id": "old", "object": "model", "created": 0, "owned_by": "x", "max_model_len": 4096}]
    clock = Clock()
    r = resolver(ttl=3600, miss_refresh_after=60, clock=clock)
    assert await r.context_window(served(stub, "old")) == 4096
    stub.openai_models.append({"id": "new", "object": "model", "created": 0, "owned_by": "x", "max_model_len": 65536})
    assert await r.context_window(served(stub, "new")) == 8192  # list is fresh: no refetch storm
    assert model_lists(stub) == 1
    clock.now += 61
    assert await r.context_window(served(stub, "new")) == 65536  # deployed since: the miss refetched
    assert model_lists(stub) == 2


async def test_a_failing_metadata_endpoint_falls_to_the_floor_and_is_retried_later(stub, caplog):
    stub.script("openai-models", Reply(status=500, body={"error": {"message": "boom", "type": "server_error"}}))
    stub.openai_models = [{"id": "served", "object": "model", "created": 0, "owned_by": "x", "max_model_len": 32768}]
    clock = Clock()
    r = resolver(clock=clock, miss_refresh_after=60)
    with caplog.at_level(logging.WARNING, logger="baton.llm.windows"):
        assert await r.context_window(served(stub)) == 8192
    assert "could not read model metadata" in caplog.text
    clock.now += 61
    assert await r.context_window(served(stub)) == 32768


async def test_router_gets_the_smallest_window_of_its_chain(stub):
    stub.openai_models = [
        {"id": "big", "object": "model", "created": 0, "owned_by": "x", "context_length": 200000},
        {"id": "small", "object": "model", "created": 0, "owned_by": "x", "context_length": 32000},
    ]
    r = resolver()
    chain = LLMRouter([served(stub, "big"), served(stub, "small")])
    assert await r.context_window(chain) == 32000
    assert model_lists(stub) == 1  # both entries share the endpoint's one list


def test_window_configuration_is_validated():
    assert parse_windows("a=1000, openai:b=2_000,") == {"a": 1000, "openai:b": 2000}
    for bad in ("a", "a=", "a=big", "=5", "a=-1"):
        with pytest.raises(ConfigurationError, match="model=tokens"):
            parse_windows(bad)
    with pytest.raises(ConfigurationError):
        ContextWindowResolver({"a": 0}, env={})
