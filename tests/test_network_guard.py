"""The network guard (tests/network_guard.py, installed by tests/conftest.py) fails any test
that reaches for a real model provider or any other host that is not this machine, even when
the code under test swallows the connection error; loopback stub servers keep working; and
no model setting from the developer's environment reaches a test.

The end-to-end proof runs a small test file under the real conftest in a child pytest (with a
developer's OpenAI key and BATON_MODEL in its environment) and reads its verdicts."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import network_guard

TESTS = Path(__file__).resolve().parent

INNER = '''
import os
import socket

import anthropic
import httpx
import openai

from stub_llm_server import openai_text, running_stub


def test_openai_sdk_whose_error_is_swallowed():
    try:
        openai.OpenAI(api_key="sk-inner", max_retries=0).models.list()
    except openai.APIConnectionError:
        pass  # a router that falls back would do this: the guard must still fail the test


def test_anthropic_sdk():
    anthropic.Anthropic(api_key="sk-ant-inner", max_retries=0).models.list()


def test_openrouter_over_httpx_async():
    import asyncio

    async def reach():
        async with httpx.AsyncClient() as client:
            await client.get("https://openrouter.ai/api/v1/models")

    try:
        asyncio.run(reach())
    except httpx.ConnectError:
        pass


def test_a_private_address_by_number():
    try:
        socket.create_connection(("10.20.30.40", 80), timeout=5)
    except ConnectionRefusedError:
        pass


def test_a_loopback_stub_still_answers():
    with running_stub() as stub:
        stub.script("openai", openai_text("hello from the stub"))
        client = openai.OpenAI(api_key="k", base_url=stub.openai_base_url, max_retries=0)
        reply = client.chat.completions.create(model="stub-model", messages=[{"role": "user", "content": "hi"}])
        by_name = httpx.get(stub.base_url.replace("127.0.0.1", "localhost") + "/v1/models")
    assert reply.choices[0].message.content == "hello from the stub"
    assert by_name.json() == {"object": "list", "data": []}


def test_the_developers_model_settings_are_gone():
    assert "OPENAI_API_KEY" not in os.environ and "BATON_MODEL" not in os.environ
    assert "ANTHROPIC_API_KEY" not in os.environ and "OLLAMA_HOST" not in os.environ


def test_a_test_may_set_its_own(monkeypatch):
    monkeypatch.setenv("BATON_MODEL", "openai:gpt-4o-mini")
    assert os.environ["BATON_MODEL"] == "openai:gpt-4o-mini"
'''


@pytest.fixture(scope="module")
def inner_run(tmp_path_factory) -> subprocess.CompletedProcess:
    """A child pytest over INNER under a copy of the real conftest, with a developer's model
    settings in its environment."""
    directory = tmp_path_factory.mktemp("guarded")
    shutil.copy(TESTS / "conftest.py", directory / "conftest.py")
    (directory / "test_inner.py").write_text(INNER)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "OPENAI_API_KEY": "sk-developer", "BATON_MODEL": "openai:gpt-4o",
           "ANTHROPIC_API_KEY": "sk-ant-developer", "OLLAMA_HOST": "http://gpu-box.internal:11434"}
    command = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--rootdir", str(directory),
               "-o", "asyncio_default_fixture_loop_scope=function", str(directory / "test_inner.py")]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=120)


def _verdicts(run: subprocess.CompletedProcess) -> dict[str, str]:
    verdicts = {}
    for line in run.stdout.splitlines():
        for word in ("PASSED", "FAILED", "ERROR"):
            if line.startswith(word + " ") and "::" in line:
                verdicts[line.split("::", 1)[1].split(" ", 1)[0]] = word
    return verdicts


def test_reaching_a_provider_fails_the_test_and_loopback_does_not(inner_run):
    verdicts = _verdicts(inner_run)
    assert verdicts == {
        "test_openai_sdk_whose_error_is_swallowed": "FAILED",
        "test_anthropic_sdk": "FAILED",
        "test_openrouter_over_httpx_async": "FAILED",
        "test_a_private_address_by_number": "FAILED",
        "test_a_loopback_stub_still_answers": "PASSED",
        "test_the_developers_model_settings_are_gone": "PASSED",
        "test_a_test_may_set_its_own": "PASSED",
    }, inner_run.stdout + inner_run.stderr
    assert inner_run.returncode == pytest.ExitCode.TESTS_FAILED
    for tried in ("resolve api.openai.com:443", "resolve api.anthropic.com:443", "resolve openrouter.ai:443",
                  "resolve 10.20.30.40:80"):
        assert f"network guard: this test tried to reach a host that is not this machine ({tried})" in inner_run.stdout


def test_a_refused_connection_fails_fast_and_names_the_host():
    with network_guard.expect_refusal() as seen:
        with pytest.raises(network_guard.RealNetworkRefused, match=r"resolve api\.anthropic\.com:443"):
            socket.create_connection(("api.anthropic.com", 443), timeout=5)
        with pytest.raises(network_guard.RealNetworkRefused, match=r"connect 93\.184\.216\.34:80"):
            with socket.socket() as raw:
                raw.connect(("93.184.216.34", 80))
        with pytest.raises(httpx.ConnectError, match="network guard"):
            httpx.get("https://api.openai.com/v1/models")
    assert [a.describe() for a in seen] == ["resolve api.anthropic.com:443", "connect 93.184.216.34:80",
                                            "resolve api.openai.com:443"]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "localhost", "LOCALHOST.", "app.localhost",
                                  "0.0.0.0", "::ffff:127.0.0.1", None])
def test_this_machine_is_allowed(host):
    assert network_guard.is_allowed(host)


@pytest.mark.parametrize("host", ["api.openai.com", "api.anthropic.com", "openrouter.ai", "10.0.0.1", "192.168.1.5",
                                  "8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8", "localhost.evil.example",
                                  "127.0.0.1.nip.io"])
def test_everything_else_is_refused(host):
    assert not network_guard.is_allowed(host)


def test_the_conftest_removed_the_model_settings_in_this_run_too():
    assert not {"BATON_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"} & set(os.environ)
