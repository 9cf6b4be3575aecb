"""The OpenAI-compatible endpoint through the workspace's answer path, driven by the
official ``openai`` SDK over a real socket: real streaming (the first content chunk leaves
before the model's last token does), follow-ups from the chat history, token usage, the
``baton`` extension in the last streamed chunk, and OpenAI's 404 for an unknown model."""

import openai
import pytest

from baton.agents import AgentResult, BaseAgent, OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.llm.openai_compat import OpenAICompatible
from baton.messages import LLMResponse
from baton.response import AIMessage, QueryResult
from baton.server import create_app
from baton.state import ApiKeys, SessionStore
from baton.workspace import Workspace, Workspaces
from live_server import serve
from stub_llm_server import Hold, openai_stream_text, running_stub


@pytest.fixture
def stub():
    with running_stub() as server:
        yield server


class SalesAgent(BaseAgent):
    """Answers with a real table (a ``QueryResult``), as a SQL specialist does."""

    async def run(self, context, *, question, **kw):
        results = QueryResult(["region", "total"], [["north", 10.0], ["south", 4.5], ["east", 7.0]])
        message = AIMessage(content="Sales by region.", results=results, data=results.records(), query="SELECT region, total FROM sales")
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message)


def routing(messages, tools):
    if messages[-1].role == "tool":
        return messages[-1].content
    return LLMResponse(tool_calls=[tool_call("sales", {"question": messages[-1].content})], usage={"input_tokens": 12, "output_tokens": 4})


def app_with(orchestrator: OrchestratorAgent):
    workspace = Workspace("acme", orchestrator, SessionStore())
    return create_app(Workspaces([workspace]), ApiKeys({"key-acme": "acme"})), workspace


def test_the_first_content_chunk_arrives_before_the_models_last_token(stub):
    pieces = ["Revenue ", "grew ", "nine ", "percent."]
    hold = Hold(before=len(pieces))  # frame 0 is the role chunk: hold the last piece
    reply = openai_stream_text(pieces, usage=(21, 9))
    reply.hold = hold
    stub.script("openai", reply)
    model = OpenAICompatible("stub-model", api_key="k", base_url=stub.openai_base_url, timeout=30)
    app, _ = app_with(OrchestratorAgent("acme-orchestrator", model=model))
    with serve(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="key-acme")
        chunks, seen_before_last_token = [], None
        for chunk in client.chat.completions.create(model="acme-orchestrator", stream=True,
                                                    messages=[{"role": "user", "content": "How did revenue do?"}]):
            chunks.append(chunk)
            if seen_before_last_token is None and chunk.choices and chunk.choices[0].delta.content:
                seen_before_last_token = not hold.passed.is_set()
                hold.release.set()
    assert seen_before_last_token is True
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "Revenue grew nine percent."
    progress = [c.model_extra["baton"]["event"]["type"] for c in chunks if "event" in (c.model_extra or {}).get("baton", {})]
    assert "workflow.start" in progress and "llm.start" in progress
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert (last.usage.prompt_tokens, last.usage.completion_tokens, last.usage.total_tokens) == (21, 9, 30)
    assert last.model_extra["baton"]["content"] == "Revenue grew nine percent."


def test_follow_ups_work_from_the_chat_history_streamed_or_not(stub):
    model = FunctionModel(routing)
    orchestrator = OrchestratorAgent("acme-orchestrator", model=model)
    orchestrator.add_agent(SalesAgent("sales", "Sales figures"))
    app, workspace = app_with(orchestrator)
    with serve(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="key-acme")
        first = client.chat.completions.create(model="acme", messages=[{"role": "user", "content": "Sales by region?"}])
        assert first.usage.prompt_tokens == 12 and first.usage.completion_tokens == 4
        answer = first.choices[0].message.content
        assert "| region | total |" in answer and "SELECT region" in answer
        calls = model.call_count
        history = [{"role": "user", "content": "Sales by region?"}, {"role": "assistant", "content": answer}]
        pie = client.chat.completions.create(model="acme-orchestrator",
                                             messages=[*history, {"role": "user", "content": "Show this as a pie chart"}])
        baton = pie.model_extra["baton"]
        assert baton["metadata"]["followup"] == "rechart" and baton["viz_type"] == "pie"
        assert baton["session_id"] == first.model_extra["baton"]["session_id"]  # the same conversation
        streamed = list(client.chat.completions.create(
            model="acme-orchestrator", stream=True,
            messages=[*history, {"role": "assistant", "content": pie.choices[0].message.content},
                      {"role": "user", "content": "Show this as a bar chart"}]))
        final = streamed[-1].model_extra["baton"]
        assert final["metadata"]["followup"] == "rechart" and final["viz_type"] == "bar"
        assert final["data"] == [{"region": "north", "total": 10.0}, {"region": "south", "total": 4.5}, {"region": "east", "total": 7.0}]
        assert final["query"] == "SELECT region, total FROM sales"
        assert model.call_count == calls  # follow-ups need no model
        stranger = client.chat.completions.create(model="acme", messages=[
            {"role": "user", "content": "Sales by region?"}, {"role": "assistant", "content": "made up by the client"},
            {"role": "user", "content": "Show this as a pie chart"}])
        assert stranger.model_extra["baton"]["metadata"].get("followup") is None  # nothing of ours to refer to


def test_an_unknown_model_is_openais_404(stub):
    app, _ = app_with(OrchestratorAgent("acme-orchestrator", model=FunctionModel(lambda m, t: "hi")))
    with serve(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="key-acme")
        assert [m.id for m in client.models.list().data] == ["acme-orchestrator"]
        with pytest.raises(openai.NotFoundError) as raised:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert raised.value.body["code"] == "model_not_found" and raised.value.body["param"] == "model"
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="gpt-4o", stream=True, messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(openai.UnprocessableEntityError):
            client.chat.completions.create(model="acme", messages=[{"role": "system", "content": "no question"}])
