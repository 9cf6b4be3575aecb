"""Model faults at every call site end each question with the right typed error, in time,
through the real ``openai`` SDK against a stub provider and the real HTTP app.

For each fault (429 with Retry-After, an HTML 500, a body cut half-way, a hang, a 200 whose
body is not JSON) at each call site (routing, the specialist's first call, its repair call
after a failed query, the planner): the answer is an error answer (``error``,
``error_code``, ``response_type: error``), the HTTP status says what failed (502/503/504),
the OpenAI endpoint answers in OpenAI's error shape, every call site was tried exactly the
policy's number of times, and the turn is stored. Healthy questions running at the same time
are answered while the faulty ones are still waiting on their provider (isolation shown by
order, not by timing).
"""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import openai
import pytest

from baton.server import ApiKeys, Workspaces, create_app
from baton.server.limits import Limits
from fault_rig import EXPECTED, FAST_POLICY, SECRET_KEY, FaultyProvider, faulty_workspace
from live_server import serve
from stub_llm_server import running_stub

KEY = {"Authorization": "Bearer key-faults"}
SITES = ["routing", "specialist", "repair", "planner"]


@pytest.fixture(scope="module")
def stub():
    with running_stub() as server:
        yield server


@pytest.fixture
def provider(stub):
    provider = FaultyProvider(stub)
    yield provider
    stub.responder = None


@pytest.fixture
async def client(stub, provider, tmp_path):
    ws = faulty_workspace(stub, tmp_path, planning=True)
    # this process runs the clients, the stub provider and the app on one interpreter: its busy
    # share is the test's own doing, not a server's load, so admission (tested on its own) admits all
    admit_all = Limits(admission_max_busy=2.0, admission_max_lag_s=60.0)
    app = create_app(Workspaces([ws]), ApiKeys({"key-faults": ws.name}), limits=admit_all)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=30) as c:
            c.workspace = ws
            yield c


def question_for(site: str) -> str:
    return {"routing": "sales by unit?", "specialist": "sales by unit?", "repair": "sales by unit? [repair]",
            "planner": "compare sales of epson and pokemon"}[site]


async def test_a_healthy_question_is_answered_with_data(client, provider):
    response = await client.post("/v1/ask", json={"question": "sales by unit?"}, headers=KEY)
    assert response.status_code == 200
    answer = response.json()
    assert answer["error"] is None and answer["error_code"] is None and answer["partial"] is False
    assert answer["data"] == [{"unit": "epson", "revenue": 800}, {"unit": "pokemon", "revenue": 1200}]


@pytest.mark.parametrize("fault", list(EXPECTED))
@pytest.mark.parametrize("site", SITES)
async def test_each_fault_at_each_call_site_is_a_typed_error_answer(client, provider, site, fault):
    provider.faults[site] = fault
    response = await client.post("/v1/ask", json={"question": question_for(site)}, headers=KEY)
    answer = response.json()
    code = EXPECTED[fault]
    assert answer["error_code"] == code, answer
    assert answer["response_type"] == "error" and answer["error"] and answer["data"] is None
    assert response.status_code == {"model_rate_limited": 503, "model_timeout": 504}.get(code, 502)
    if response.status_code == 503:
        assert int(response.headers["retry-after"]) >= 1
    assert client.workspace.model.tries[site] == FAST_POLICY.attempts  # one policy: tried the same number of times everywhere
    assert 1 <= await provider.calls_at(site, FAST_POLICY.attempts) <= FAST_POLICY.attempts  # and the provider saw them
    # nothing the provider sent leaks into the answer: no HTML, no prompt
    assert "<html" not in response.text and "You are DatabaseOrchestrator" not in response.text
    turns = (await client.get(f"/v1/sessions/{answer['session_id']}", headers=KEY)).json()["turns"]
    assert turns[-1]["answer"]["error_code"] == code  # the failed turn is recorded like any answer


async def test_malformed_tool_call_json_at_routing_is_a_typed_error(client, provider):
    provider.faults["routing"] = "tool_json"
    response = await client.post("/v1/ask", json={"question": "sales by unit?"}, headers=KEY)
    answer = response.json()
    assert (response.status_code, answer["error_code"], answer["response_type"]) == (502, "model_bad_response", "error")
    assert answer["data"] is None


async def test_one_specialist_failing_makes_a_partial_answer_that_says_what_failed(client, provider):
    real = provider.respond

    def inventory_fails(kind, body):
        messages = body.get("messages") or [] if isinstance(body, dict) else []
        if kind == "openai" and any(str(m.get("content", "")).startswith("inventory:") for m in messages if m.get("role") == "user"):
            from fault_rig import fault_reply

            return fault_reply("500", False)
        return real(kind, body)

    provider.stub.responder = inventory_fails
    response = await client.post("/v1/ask", json={"question": "both units' sales?"}, headers=KEY)
    answer = response.json()
    assert response.status_code == 200
    assert answer["partial"] is True and answer["error"] is None
    assert list(answer["data"]) == ["sales"]
    (failure,) = answer["metadata"]["agent_errors"]
    assert failure["agent"] == "inventory" and failure["error_code"] == "model_unavailable"


async def test_a_hang_past_the_deadline_ends_the_question_at_the_deadline(stub, provider, tmp_path):
    slow_calls = FAST_POLICY.__class__(attempts=3, base_delay=0.01, call_timeout=20)
    ws = faulty_workspace(stub, tmp_path, policy=slow_calls, deadline_s=1.0)
    provider.faults["specialist"] = "hang"
    async with ws:
        answer = await ws.answer("sales by unit?")
    assert (answer.error_code, answer.response_type.value) == ("deadline_exceeded", "error")
    assert provider.calls["specialist"] == 1  # no retry could have ended in time


async def test_the_openai_endpoint_answers_in_openais_error_shape(client, provider):
    provider.faults["specialist"] = "429"
    response = await client.post("/v1/chat/completions", headers=KEY, json={
        "model": "faults-orchestrator", "messages": [{"role": "user", "content": "sales by unit?"}]})
    assert response.status_code == 503 and response.headers["retry-after"]
    error = response.json()["error"]
    assert error["code"] == "model_rate_limited" and error["type"] == "service_unavailable" and error["message"]
    assert response.json()["baton"]["error_code"] == "model_rate_limited"


async def test_a_stream_cut_after_its_first_token_ends_in_an_error_not_a_stop(client, provider):
    provider.faults["routing"] = "cut"
    async with client.stream("POST", "/v1/chat/completions", headers=KEY, json={
            "model": "faults-orchestrator", "stream": True, "messages": [{"role": "user", "content": "sales by unit?"}]}) as r:
        frames = [line.removeprefix("data: ") async for line in r.aiter_lines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    last = json.loads(frames[-2])
    assert last["error"]["code"] == "model_unavailable"
    assert not any('"finish_reason": "stop"' in f for f in frames)
    async with client.stream("POST", "/v1/ask/stream", headers=KEY, json={"question": "sales by unit?"}) as r:
        body = "".join([chunk async for chunk in r.aiter_text()])
    answer = json.loads(body.strip().split("\n\n")[-1].split("\n", 1)[1].removeprefix("data: "))
    assert answer["error_code"] == "model_unavailable" and answer["response_type"] == "error"


async def test_a_provider_401_that_echoes_the_key_never_shows_it(client, provider):
    provider.faults["specialist"] = "auth_echo"
    response = await client.post("/v1/ask", json={"question": "sales by unit?"}, headers=KEY)
    answer = response.json()
    assert answer["error_code"] == "model_auth_failed" and response.status_code == 502
    assert provider.calls["specialist"] == 1  # an auth failure is not retried
    assert SECRET_KEY not in response.text and "SECRETKEY" not in response.text
    session = await client.get(f"/v1/sessions/{answer['session_id']}", headers=KEY)
    assert SECRET_KEY not in session.text and "Bearer" not in session.text


def test_the_official_sdk_raises_on_a_failed_question(stub, provider, tmp_path):
    ws = faulty_workspace(stub, tmp_path)
    provider.faults["routing"] = "hang"
    app = create_app(Workspaces([ws]), ApiKeys({"key-faults": ws.name}))
    with serve(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="key-faults", max_retries=0)
        with pytest.raises(openai.APIStatusError) as info:
            client.chat.completions.create(model="faults-orchestrator", messages=[{"role": "user", "content": "sales?"}])
    assert info.value.status_code == 504 and info.value.body["code"] == "model_timeout"
    asyncio.run(ws.aclose())


async def test_healthy_questions_are_answered_while_faulty_ones_wait_on_their_provider(client, provider):
    """Half the questions hit a provider that holds every call; the other half are
    answered before any held call is released (the policy's timeout is not what frees
    them: the held calls are still waiting when the healthy answers are complete)."""
    provider.gate = threading.Event()
    provider.gated_site = "repair"
    faulty = [asyncio.ensure_future(client.post("/v1/ask", json={"question": f"sales by unit? [repair] {n}"}, headers=KEY))
              for n in range(8)]
    healthy = await asyncio.gather(*(client.post("/v1/ask", json={"question": f"sales by unit? {n}"}, headers=KEY)
                                     for n in range(16)))
    still_waiting = sum(not f.done() for f in faulty)
    provider.gate.set()
    done = await asyncio.gather(*faulty)
    assert all(r.status_code == 200 and r.json()["data"] for r in healthy)
    assert still_waiting == len(faulty)
    assert all(r.json()["error_code"] in ("model_timeout", None) for r in done)


def test_a_failure_code_comes_from_the_error_not_from_words_in_its_message():
    """A provider's own 400 saying "... is not valid JSON" is a rejected request; only a reply
    that is no API response at all (typed where it is read) is a bad response."""
    from baton.agents.failures import code_of
    from baton.errors import ProviderBadRequestError
    from baton.llm.errors_map import unexpected_response

    echoed = ProviderBadRequestError("openai/m: 'response_format' is not valid JSON schema", provider="openai", model="m")
    assert code_of(echoed) == "model_rejected_request"
    assert code_of(unexpected_response("<html>502 Bad Gateway</html>", provider="openai", model="m")) == "model_bad_response"
