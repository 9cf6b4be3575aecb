"""LLMRouter: retry, Retry-After, fallback and preferences, over real SDKs and test doubles."""

from __future__ import annotations

import logging
import random

import pytest

from baton.errors import (
    AllProvidersFailedError,
    ConfigurationError,
    ContextLengthExceededError,
    ProviderAuthError,
    ProviderRateLimitError,
    ProviderServerError,
    ProviderTimeoutError,
    ScriptExhaustedError,
)
from baton.llm import (
    Anthropic,
    ChatModel,
    LLMRouter,
    ModelPreferences,
    OpenAICompatible,
    RetryPolicy,
    ScriptedModel,
    model_choice,
)
from baton.messages import LLMResponse, Message, StreamChunk
from stub_llm_server import (
    Reply,
    StubLLMServer,
    anthropic_text,
    openai_error,
    openai_stream_text,
    openai_text,
    running_stub,
)


@pytest.fixture
def stub():
    with running_stub() as server:
        yield server


Q = [Message.user("how many orders?")]


class SleepRecorder:
    """The injected sleep: records what the router asked for, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def openai_model(stub: StubLLMServer, model: str = "primary", **kw) -> OpenAICompatible:
    return OpenAICompatible(model, api_key="k", base_url=stub.openai_base_url, timeout=kw.pop("timeout", 5.0), **kw)


def router(*models, sleep=None, **policy) -> LLMRouter:
    return LLMRouter(models, policy=RetryPolicy(**policy), sleep=sleep or SleepRecorder(), rng=random.Random(7))


# --- over the real SDKs ---------------------------------------------------------------


async def test_429_retry_waits_exactly_retry_after(stub):
    sleep = SleepRecorder()
    stub.script("openai",
                openai_error(429, "slow down", headers={"retry-after": "3"}),
                openai_error(429, "slow down", headers={"retry-after": "1.5"}),
                openai_text("42"))
    response = await router(openai_model(stub), sleep=sleep, attempts=3).complete(Q)
    assert response.content == "42"
    assert sleep.delays == [3.0, 1.5]
    assert len(stub.requests_of("openai")) == 3


async def test_retry_after_is_capped(stub):
    sleep = SleepRecorder()
    stub.script("openai", openai_error(429, "slow down", headers={"retry-after": "3600"}), openai_text("ok"))
    await router(openai_model(stub), sleep=sleep, max_retry_after=30).complete(Q)
    assert sleep.delays == [30]


async def test_500_is_retried_then_succeeds(stub, caplog):
    sleep = SleepRecorder()
    stub.script("openai", openai_error(500, "boom", type="server_error"), openai_text("recovered"))
    with caplog.at_level(logging.INFO, logger="baton.llm.router"):
        response = await router(openai_model(stub), sleep=sleep, base_delay=0.5, jitter=0).complete(Q)
    assert response.content == "recovered"
    assert sleep.delays == [0.5]
    assert any(r.levelno == logging.INFO and "retry 1/2" in r.getMessage() for r in caplog.records)


async def test_timeouts_are_retried_then_reported(stub):
    stub.script("openai", Reply(delay=30, body={}), Reply(delay=30, body={}))
    with pytest.raises(AllProvidersFailedError) as info:
        await router(openai_model(stub, timeout=0.2), attempts=2).complete(Q)
    assert [type(e) for e in info.value.errors] == [ProviderTimeoutError]
    assert info.value.retryable


async def test_falls_back_to_the_second_provider_when_the_first_keeps_failing(stub, caplog):
    sleep = SleepRecorder()
    stub.script("openai", *(openai_error(503, "down", type="server_error") for _ in range(3)))
    stub.script("anthropic", anthropic_text("from claude"))
    claude = Anthropic("claude-stub", api_key="k", base_url=stub.base_url, timeout=5)
    with caplog.at_level(logging.WARNING, logger="baton.llm.router"):
        response = await router(openai_model(stub), claude, sleep=sleep, attempts=3).complete(Q)
    assert (response.content, response.provider) == ("from claude", "anthropic")
    assert len(stub.requests_of("openai")) == 3 and len(sleep.delays) == 2
    assert any("falling back to anthropic:claude-stub" in r.getMessage() for r in caplog.records)


async def test_auth_error_is_not_retried_but_falls_back(stub):
    sleep = SleepRecorder()
    stub.script("openai", openai_error(401, "bad key", for_model="primary"), openai_text("backup answer", for_model="backup"))
    response = await router(openai_model(stub, "primary"), openai_model(stub, "backup"), sleep=sleep).complete(Q)
    assert response.content == "backup answer"
    assert [r.body["model"] for r in stub.requests_of("openai")] == ["primary", "backup"]
    assert sleep.delays == []


async def test_all_failed_carries_each_error(stub):
    stub.script("openai", openai_error(401, "bad key", for_model="a"), openai_error(429, "busy", for_model="b"))
    with pytest.raises(AllProvidersFailedError) as info:
        await router(openai_model(stub, "a"), openai_model(stub, "b"), attempts=1).complete(Q)
    assert [type(e) for e in info.value.errors] == [ProviderAuthError, ProviderRateLimitError]
    assert [e.model for e in info.value.errors] == ["a", "b"]
    assert info.value.retryable  # the 429 could pass later
    assert "openai-compatible:a: ProviderAuthError" in str(info.value)


async def test_context_length_propagates_without_fallback(stub):
    stub.script("openai", openai_error(400, "too long", code="context_length_exceeded"))
    backup = ScriptedModel(["never used"])
    with pytest.raises(ContextLengthExceededError):
        await router(openai_model(stub), backup).complete(Q)
    assert backup.remaining == 1


async def test_stream_falls_back_before_the_first_chunk(stub):
    stub.script("openai", openai_error(500, "boom", for_model="a"), openai_stream_text(["Hi", "!"]))
    chunks = [c async for c in router(openai_model(stub, "a"), openai_model(stub, "b"), attempts=1).stream(Q)]
    assert [c.delta for c in chunks if c.response is None] == ["Hi", "!"]
    assert chunks[-1].response.content == "Hi!"


# --- rules, with test doubles ---------------------------------------------------------


class FailsMidStream:
    provider, model = "flaky", "mid"

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None):
        raise NotImplementedError

    async def stream(self, messages, tools=None, *, temperature=None, max_tokens=None):
        yield StreamChunk(delta="partial ")
        raise ProviderServerError("connection dropped", provider="flaky", model="mid")


async def test_stream_does_not_fall_back_after_a_chunk_was_yielded():
    backup = ScriptedModel(["never used"])
    seen = []
    with pytest.raises(ProviderServerError):
        async for chunk in router(FailsMidStream(), backup).stream(Q):
            seen.append(chunk.delta)
    assert seen == ["partial "] and backup.remaining == 1


async def test_backoff_grows_exponentially_with_bounded_jitter():
    sleep = SleepRecorder()
    errors = [ProviderServerError("x", provider="s", model="m") for _ in range(5)]
    model = ScriptedModel([*errors, "finally"])
    response = await router(model, sleep=sleep, attempts=6, base_delay=1.0, max_delay=5.0, jitter=0.5).complete(Q)
    assert response.content == "finally"
    ceilings = [1.0, 2.0, 4.0, 5.0, 5.0]
    assert len(sleep.delays) == 5
    for delay, ceiling in zip(sleep.delays, ceilings):
        assert ceiling * 0.5 <= delay <= ceiling
    assert len(set(sleep.delays)) == 5  # jittered, not lockstep


async def test_non_provider_errors_propagate_untouched():
    backup = ScriptedModel(["unused"])
    with pytest.raises(ScriptExhaustedError):
        await router(ScriptedModel([]), backup).complete(Q)


async def test_router_reports_the_primary_and_responses_the_answerer():
    primary = ScriptedModel([ProviderAuthError("no", provider="scripted", model="p")], model="p")
    r = router(primary, ScriptedModel([LLMResponse(content="b")], model="b"))
    assert (r.provider, r.model) == ("scripted", "p")
    assert (await r.complete(Q)).model == "b"


def test_providers_and_router_satisfy_the_chat_model_protocol(stub):
    models = [openai_model(stub), Anthropic("c", api_key="k", base_url=stub.base_url)]
    assert all(isinstance(m, ChatModel) for m in [*models, router(*models)])


def test_policy_validation():
    with pytest.raises(ConfigurationError):
        RetryPolicy(attempts=0)
    with pytest.raises(ConfigurationError):
        LLMRouter([])


# --- preferences ------------------------------------------------------------------------

ENV = {"OPENAI_API_KEY": "sk-test", "OPENROUTER_API_KEY": "or-test"}


def labels(r: LLMRouter) -> list[str]:
    return [f"{m.provider}:{m.model}" for m in r.models]


def test_preferences_flow_user_then_project_then_app_without_duplicates():
    r = ModelPreferences(user="openai:gpt-user", project=["openrouter:meta/llama", "openai:gpt-user"],
                         app="ollama:llama3.2,openai:gpt-app").router(env=ENV)
    assert labels(r) == ["openai:gpt-user", "openrouter:meta/llama", "ollama:llama3.2", "openai:gpt-app"]


def test_missing_levels_and_model_instances():
    mine = ScriptedModel(["hi"], model="mine")
    assert ModelPreferences(project=mine, app="openai:gpt-app").chain(ENV)[0] is mine
    assert labels(ModelPreferences(app="openai:gpt-app").router(env=ENV)) == ["openai:gpt-app"]


def test_preferred_provider_moves_its_entries_first_keeping_order():
    r = ModelPreferences(project="openai:a,openrouter:x/y,openai:b", app="openrouter:z", preferred_provider="openrouter").router(env=ENV)
    assert labels(r) == ["openrouter:x/y", "openrouter:z", "openai:a", "openai:b"]


def test_unbuildable_preference_is_skipped_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="baton.llm.preferences"):
        r = ModelPreferences(user="anthropic:claude-x", app="openai:gpt-app").router(env=ENV)
    assert labels(r) == ["openai:gpt-app"]
    assert any("ANTHROPIC_API_KEY" in rec.getMessage() for rec in caplog.records)


def test_nothing_usable_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        ModelPreferences(user="anthropic:claude-x").router(env={})
    with pytest.raises(ConfigurationError, match="BATON_MODEL"):
        ModelPreferences().router(env={})


def test_request_preferences_become_the_user_level():
    assert model_choice(None, "openrouter") is None
    assert model_choice("openai:gpt-4o", "openrouter") == "openai:gpt-4o"
    assert model_choice("qwen2.5:7b", "ollama") == "ollama:qwen2.5:7b"
    assert model_choice("anthropic/claude-3.5-sonnet", "OpenRouter") == "openrouter:anthropic/claude-3.5-sonnet"
    r = ModelPreferences(user=model_choice("meta/llama", "openrouter"), app="openai:gpt-app").router(env=ENV)
    assert labels(r) == ["openrouter:meta/llama", "openai:gpt-app"]


async def test_503_retry_after_is_honoured_like_a_429s(stub):
    sleep = SleepRecorder()
    stub.script("openai", openai_error(503, "maintenance", type="server_error", headers={"retry-after": "3"}),
                openai_text("back"))
    response = await router(openai_model(stub), sleep=sleep, base_delay=0.5).complete(Q)
    assert response.content == "back" and sleep.delays == [3.0]
