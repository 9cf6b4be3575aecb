"""Model strings and BATON_MODEL: parsing, keys, base URLs, chains, errors that say what to set."""

from __future__ import annotations

import pytest

from baton.errors import ConfigurationError
from baton.llm import Anthropic, LLMRouter, OpenAICompatible, model_from_env, model_from_string
from baton.messages import Message
from stub_llm_server import openai_text, running_stub


@pytest.fixture
def stub():
    with running_stub() as server:
        yield server


KEYS = {"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a", "OPENROUTER_API_KEY": "sk-r"}


@pytest.mark.parametrize(
    "spec, cls, provider, model, base_url",
    [
        ("openai:gpt-4o-mini", OpenAICompatible, "openai", "gpt-4o-mini", "https://api.openai.com/v1"),
        ("anthropic:claude-sonnet-4-5", Anthropic, "anthropic", "claude-sonnet-4-5", "https://api.anthropic.com"),
        ("openrouter:anthropic/claude-3.5-sonnet", OpenAICompatible, "openrouter", "anthropic/claude-3.5-sonnet",
         "https://openrouter.ai/api/v1"),
        ("ollama:qwen2.5:7b", OpenAICompatible, "ollama", "qwen2.5:7b", "http://localhost:11434/v1"),
        ("openai-compatible:http://gpu-box:8000/v1#meta/Llama-3.1-8B", OpenAICompatible, "openai-compatible",
         "meta/Llama-3.1-8B", "http://gpu-box:8000/v1"),
        ("  OpenAI : gpt-4o ", OpenAICompatible, "openai", "gpt-4o", "https://api.openai.com/v1"),
    ],
)
def test_model_strings(spec, cls, provider, model, base_url):
    built = model_from_string(spec, env=KEYS)
    assert isinstance(built, cls)
    assert (built.provider, built.model, built.base_url) == (provider, model, base_url)


def test_keys_come_from_the_environment():
    assert model_from_string("openai:m", env=KEYS)._client.api_key == "sk-o"
    assert model_from_string("openrouter:x/y", env=KEYS)._client.api_key == "sk-r"
    assert model_from_string("anthropic:c", env=KEYS)._client.api_key == "sk-a"


@pytest.mark.parametrize(
    "spec, var",
    [("openai:gpt-4o", "OPENAI_API_KEY"), ("anthropic:claude-x", "ANTHROPIC_API_KEY"), ("openrouter:a/b", "OPENROUTER_API_KEY")],
)
def test_missing_key_names_the_variable(spec, var):
    with pytest.raises(ConfigurationError, match=f"set {var}"):
        model_from_string(spec, env={})


def test_local_servers_need_no_key():
    assert model_from_string("ollama:llama3.2", env={}).model == "llama3.2"
    assert model_from_string("openai-compatible:http://127.0.0.1:8080/v1#local", env={}).model == "local"


def test_base_url_overrides():
    env = {**KEYS, "OPENAI_BASE_URL": "http://proxy:9000/v1", "OLLAMA_HOST": "10.0.0.5:11500"}
    assert model_from_string("openai:gpt-4o", env=env).base_url == "http://proxy:9000/v1"
    assert model_from_string("ollama:llama3.2", env=env).base_url == "http://10.0.0.5:11500/v1"
    assert model_from_string("ollama:m", env={"OLLAMA_HOST": "https://ollama.example.com"}).base_url == "https://ollama.example.com/v1"


@pytest.mark.parametrize(
    "spec, hint",
    [
        ("gpt-4o", "provider:model"),
        ("openai:", "provider:model"),
        ("", "empty model string"),
        ("gemini:pro", "unknown provider 'gemini'"),
        ("openai-compatible:http://host/v1", "<base_url>#<model>"),
        ("openai-compatible:host-without-scheme#m", "<base_url>#<model>"),
    ],
)
def test_malformed_strings_say_how_to_fix_them(spec, hint):
    with pytest.raises(ConfigurationError, match=hint.replace("(", r"\(")):
        model_from_string(spec, env=KEYS)


def test_comma_separated_string_is_a_fallback_chain():
    chain = model_from_string("openai:gpt-4o, anthropic:claude-x ,ollama:llama3.2", env=KEYS)
    assert isinstance(chain, LLMRouter)
    assert [(m.provider, m.model) for m in chain.models] == [
        ("openai", "gpt-4o"), ("anthropic", "claude-x"), ("ollama", "llama3.2")]


def test_model_from_env():
    assert model_from_env({}) is None
    assert model_from_env({"BATON_MODEL": "  "}) is None
    assert model_from_env({**KEYS, "BATON_MODEL": "openai:gpt-4o"}).model == "gpt-4o"
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        model_from_env({"BATON_MODEL": "openai:gpt-4o"})


def test_timeout_from_environment_and_options():
    model = model_from_string("ollama:m", env={"BATON_LLM_TIMEOUT": "7.5"})
    assert model._client.timeout == 7.5
    assert model_from_string("ollama:m", env={}, timeout=3, context_window=4096).context_window == 4096
    with pytest.raises(ConfigurationError, match="BATON_LLM_TIMEOUT"):
        model_from_string("ollama:m", env={"BATON_LLM_TIMEOUT": "soon"})


async def test_a_configured_model_talks_to_its_server(stub):
    stub.script("openai", openai_text("hello from vLLM"))
    model = model_from_env({"BATON_MODEL": f"openai-compatible:{stub.openai_base_url}#served-model"})
    response = await model.complete([Message.user("hi")])
    assert response.content == "hello from vLLM"
    assert stub.requests_of("openai")[0].body["model"] == "served-model"
