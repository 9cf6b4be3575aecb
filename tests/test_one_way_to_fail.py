"""One way to fail: every error answer is made by ``AIMessage.failed`` (or ``.fail`` on an answer
that keeps its parts), so none is without an ``error_code``; the no-model reply carries
``model_not_configured`` and is recognised by that code, not by its text."""

import ast
from pathlib import Path

from baton.agents import AgentContext, AgentResult, BaseAgent, OrchestratorAgent
from baton.agents.lexical_routing import LexicalRouter, is_no_model_answer
from baton.response import MODEL_NOT_CONFIGURED, AIMessage, ResponseType
from baton.server.errors import answer_status

SRC = Path(__file__).resolve().parents[1] / "src" / "baton"
FAILING_TYPES = {"ERROR", "STAGE_FAILED"}


def _is_failing_type(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in FAILING_TYPES) or (
        isinstance(node, ast.Constant) and node.value in ("error", "stage_failed"))


def _hand_made_failures(path: Path) -> list[str]:
    """``AIMessage(...)`` given an error, a code or a failing type, and a failing type or a
    code set on an answer afterwards: each an error answer made outside ``AIMessage.failed``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "AIMessage":
            for kw in node.keywords:
                if kw.arg in ("error", "error_code") or (kw.arg == "response_type" and _is_failing_type(kw.value)):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} AIMessage({kw.arg}=...)")
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if not isinstance(target, ast.Attribute):
                    continue
                if target.attr == "response_type" and _is_failing_type(node.value):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} .response_type = {ast.unparse(node.value)}")
                if target.attr == "error_code" and ast.unparse(node.value) != "MODEL_NOT_CONFIGURED":
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} .error_code = {ast.unparse(node.value)}")
    return found


def test_no_error_answer_is_made_outside_aimessage_failed():
    sources = [p for p in SRC.rglob("*.py") if p != SRC / "response.py"]
    assert len(sources) > 100
    found = [hit for path in sources for hit in _hand_made_failures(path)]
    assert found == [], "error answers made by hand (use AIMessage.failed / .fail):\n" + "\n".join(found)


def test_failed_always_has_a_code_and_fail_keeps_the_answer():
    made = AIMessage.failed("sql_failed", "no such column: x", input="q", retry_after_s=2)
    assert (made.error_code, made.error, made.content, made.response_type) == ("sql_failed", "no such column: x",
                                                                              "no such column: x", ResponseType.ERROR)
    assert made.input == "q" and made.meta["retry_after_s"] == 2
    assert AIMessage.failed("deadline_exceeded", "late", "Out of time.").content == "Out of time."
    kept = AIMessage(content="partial rows", data=[{"a": 1}], metadata={"mode": "synthesis"})
    assert kept.fail("agent_failed", "all failed") is kept
    assert kept.data == [{"a": 1}] and kept.metadata["mode"] == "synthesis" and kept.error_code == "agent_failed"
    assert AIMessage.from_dict(kept.to_dict()) == kept  # the JSON shape is the one answers always had


class _Refuses(BaseAgent):
    async def run(self, context: AgentContext, **kwargs) -> AgentResult:
        return AgentResult(agent_name=self.name, status="error", error="the table is gone", error_type="permission_denied")


async def test_an_agent_that_fails_answers_with_a_code():
    message = await _Refuses(name="refuser").ask("anything")
    assert message.response_type == ResponseType.ERROR
    assert message.error_code == "permission_denied" and message.error == "the table is gone"


async def test_the_no_model_reply_carries_model_not_configured():
    orchestrator = OrchestratorAgent(model=LexicalRouter())  # no specialist answers a poem without a model
    reply = await orchestrator.ask("Write a poem about spring")
    assert reply.error_code == MODEL_NOT_CONFIGURED and is_no_model_answer(reply)
    assert reply.response_type == ResponseType.TEXT and reply.error is None  # information, not a failure (issue 28)
    assert answer_status(reply) == 200
    assert not is_no_model_answer(AIMessage(content=reply.content))  # its text alone says nothing any more
