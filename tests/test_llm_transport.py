"""The provider SDKs' HTTP transport (``baton.llm.transport``): aiohttp by default, httpx on
request, one client per event loop, and the aiohttp transport's errors said as what they
were, through the real ``openai`` SDK against the local stub server."""

from __future__ import annotations

import asyncio

import aiohttp
import openai
import pytest

from baton.errors import ConfigurationError, ProviderConnectionError, ProviderTimeoutError
from baton.llm import OpenAICompatible
from baton.llm.errors_map import map_sdk_error
from baton.llm.transport import transport_choice
from baton.messages import Message
from stub_llm_server import openai_text, running_stub


@pytest.fixture
def stub():
    with running_stub() as server:
        yield server


def make(stub) -> OpenAICompatible:
    return OpenAICompatible("stub-model", api_key="test-key", base_url=stub.openai_base_url, timeout=5.0)


def test_the_default_transport_is_the_sdks_aiohttp_one(stub, monkeypatch):
    monkeypatch.delenv("BATON_LLM_TRANSPORT", raising=False)
    assert isinstance(make(stub)._client._client, openai.DefaultAioHttpClient)
    monkeypatch.setenv("BATON_LLM_TRANSPORT", "httpx")
    assert not isinstance(make(stub)._client._client, openai.DefaultAioHttpClient)


def test_an_unknown_transport_is_a_configuration_error(stub, monkeypatch):
    monkeypatch.setenv("BATON_LLM_TRANSPORT", "curl")
    with pytest.raises(ConfigurationError, match="BATON_LLM_TRANSPORT"):
        make(stub)
    assert transport_choice({"BATON_LLM_TRANSPORT": " HTTPX "}) == "httpx"
    assert transport_choice({}) == "aiohttp"


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_one_model_answers_on_one_event_loop_after_another(stub, monkeypatch, transport):
    # A client's connections belong to the loop that opened them: the SDK's client reused
    # from a second loop fails ("attached to a different loop" / "Event loop is closed").
    monkeypatch.setenv("BATON_LLM_TRANSPORT", transport)
    model = make(stub)
    stub.script("openai", *(openai_text(f"answer {i}") for i in range(3)))

    async def ask() -> str | None:
        return (await model.complete([Message.user("q")])).content

    assert [asyncio.run(ask()) for _ in range(3)] == ["answer 0", "answer 1", "answer 2"]

    async def close() -> None:
        await model.aclose()

    asyncio.run(close())


def test_loops_on_two_threads_at_once_each_get_their_own_client(stub):
    import threading

    model = make(stub)
    stub.script("openai", *(openai_text("hi") for _ in range(8)))
    used: dict[str, object] = {}
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def thread_main(name: str) -> None:
        async def run() -> None:
            start.wait()  # both loops bind at the same moment
            for _ in range(4):
                assert (await model.complete([Message.user("q")])).content == "hi"
            used[name] = model._client

        try:
            asyncio.run(run())
        except BaseException as exc:  # reported below, on the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=thread_main, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures and used["a"] is not used["b"]
    asyncio.run(model.aclose())  # their loops have ended: their clients are dropped


async def test_aclose_closes_the_client_of_this_loop(stub):
    model = make(stub)
    stub.script("openai", openai_text("hi"))
    await model.complete([Message.user("q")])
    client = model._client
    await model.aclose()
    assert client.is_closed()


async def test_aclose_of_an_unused_model_closes_its_client(stub):
    model = make(stub)
    client = model._clients.first
    await model.aclose()
    assert client.is_closed()


async def test_aclose_closes_the_client_of_a_loop_running_on_another_thread(stub):
    # as a durable worker's loop: the stages used the model there, the workspace closes it here
    import threading

    model = make(stub)
    stub.script("openai", openai_text("there"))
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:
        answer = asyncio.run_coroutine_threadsafe(model.complete([Message.user("q")]), other).result(10)
        assert answer.content == "there"
        await model.aclose()
        assert model._clients.first.is_closed()  # the client the other loop took
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(5)
        other.close()


def _sdk_timeout_from(cause: BaseException) -> openai.APITimeoutError:
    """What the SDK raises when its aiohttp transport fails: aiohttp's error, mapped to an
    httpx timeout by the transport, wrapped in ``APITimeoutError`` by the SDK."""
    import httpx2

    request = httpx2.Request("POST", "http://stub/v1/chat/completions")
    try:
        try:
            raise cause
        except BaseException as exc:
            raise httpx2.ConnectTimeout(str(exc)) from exc
    except httpx2.ConnectTimeout as mapped:
        error = openai.APITimeoutError(request=request)
        error.__cause__ = mapped
        return error


@pytest.mark.parametrize("cause, expected", [
    (aiohttp.ServerDisconnectedError(), ProviderConnectionError),
    (aiohttp.ClientOSError(104, "Connection reset by peer"), ProviderConnectionError),
    (aiohttp.ServerTimeoutError("Timeout on reading data from socket"), ProviderTimeoutError),
    (aiohttp.ConnectionTimeoutError("Connection timeout to host"), ProviderTimeoutError),
])
def test_the_aiohttp_transports_failures_are_said_as_what_they_were(cause, expected):
    # (a refused connection, through the SDK: test_llm_openai's unreachable server)
    error = map_sdk_error(_sdk_timeout_from(cause), provider="openai", model="m")
    assert type(error) is expected


def test_an_aiohttp_error_the_sdk_let_through_is_mapped():
    assert type(map_sdk_error(aiohttp.ClientPayloadError("cut"), provider="openai", model="m")) is ProviderConnectionError
    assert type(map_sdk_error(aiohttp.ServerTimeoutError("slow"), provider="openai", model="m")) is ProviderTimeoutError
