"""The planner: decide whether a question needs several steps, and ask the LLM for the plan.

``needs_plan`` is a cheap, LLM-free complexity check, so a plain question never pays for a
planning call. It says yes for: sequencing words ("then", "after that", "based on those
results", ...), a comparison of two things ("compare X and/with Y", "versus", "difference
between"), more than one question mark, a numbered list of steps, or three or more distinct
metric words ("total", "average", "growth", ...). A request skips it, always answering
"no plan", with ``context.extra["_skip_complexity"]`` truthy.

``plan`` asks the model for the plan as JSON (schema in the system prompt), parses it
strictly (``ExecutionPlan.from_json``), and on any problem gives the model exactly ONE repair
round with every problem listed; a second invalid plan raises ``PlanValidationError`` whose
``problems`` are the second attempt's and whose ``raw`` is the model's text. The model's
output is data: it is parsed, never executed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from baton.errors import ConfigurationError
from baton.events import PipelinePlan, PipelinePlanInvalid
from baton.llm.base import ChatModel
from baton.messages import Message, add_usage
from baton.pipeline.errors import PlanValidationError
from baton.pipeline.models import STAGE_TOOLS
from baton.pipeline.plan import ExecutionPlan

if TYPE_CHECKING:
    from baton.agents import AgentContext

_SEQUENCE = re.compile(
    r"\b(then|after that|afterwards|and next|followed by|finally|once (?:you|we) have|"
    r"based on (?:the|those|these|that) (?:results?|rows|numbers|answers?)|using (?:the|those|these) results?)\b",
    re.IGNORECASE,
)
_COMPARE = re.compile(
    r"\b(?:compare|comparing|comparison of)\b.+\b(?:and|with|to|against|vs\.?|versus)\b|\bversus\b|\bvs\.?\s|\bdifference between\b.+\band\b",
    re.IGNORECASE,
)
_NUMBERED = re.compile(r"(?:^|\s)(?:1[.)]|step 1\b).+(?:\s2[.)]|step 2\b)", re.IGNORECASE | re.DOTALL)
_METRICS = re.compile(
    r"\b(total|sum|count|number of|average|avg|mean|median|min(?:imum)?|max(?:imum)?|growth|rate|ratio|"
    r"share|percent(?:age)?|revenue|margin|churn|retention|conversion|trend)\b",
    re.IGNORECASE,
)

TOOL_DESCRIPTIONS = {
    "query_database": "run a SQL question against the user's database; returns a table",
    "search_codebase": "search indexed source code and documents; returns a cited text answer",
    "analyze_results": "analyze the tables of the stages it depends on (pandas/SQL over DataFrames named by stage_id)",
}

SYSTEM_PROMPT = """You break a data question into a plan of stages. Answer with ONE JSON object and nothing else:
{{"question": "<the question>", "stages": [
  {{"stage_id": "short_snake_case_id", "description": "what this stage does", "tool": "<tool>",
    "question": "the self-contained sub-question for that tool", "depends_on": ["<stage_id>", ...],
    "checkpoint": false, "validation": {{"min_rows": 1, "max_rows": null, "required_columns": []}},
    "join_on": [], "compare": []}}]}}
Tools:
{tools}
Rules: stage_ids are unique; depends_on names only earlier stages whose results the stage needs;
stages that do not need each other must not depend on each other (they run in parallel);
analyze_results always depends on the stages it analyzes; join_on/compare name the columns a
stage joins on or compares across its dependencies; use at most {max_stages} stages;
"validation" and "checkpoint" are optional; no other fields."""


class Planner:
    """Builds ``ExecutionPlan``s with ``model`` (or the request's ``llm_router``)."""

    def __init__(self, model: ChatModel | None = None, *, tools: Sequence[str] = STAGE_TOOLS, max_stages: int = 8) -> None:
        self.model = model
        self.tools = tuple(tools)
        self.max_stages = max_stages

    def needs_plan(self, question: str, context: AgentContext | None = None) -> bool:
        if context is not None and context.extra.get("_skip_complexity"):
            return False
        text = question.strip()
        if _SEQUENCE.search(text) or _COMPARE.search(text) or _NUMBERED.search(text):
            return True
        if text.count("?") > 1:
            return True
        metrics = {m.lower() for m in _METRICS.findall(text)}
        return len(metrics) >= 3

    async def plan(self, question: str, context: AgentContext) -> ExecutionPlan:
        model = self.model or context.llm_router
        if model is None:
            raise ConfigurationError("the planner has no model: pass Planner(model=...) or set the request's llm_router")
        tools = "\n".join(f"- {name}: {TOOL_DESCRIPTIONS.get(name, 'a registered tool')}" for name in self.tools)
        messages = [
            Message.system(SYSTEM_PROMPT.format(tools=tools, max_stages=self.max_stages)),
            *context.chat_history[-6:],
            Message.user(question),
        ]
        usage: dict[str, int] = {}
        error: PlanValidationError | None = None
        for attempt in (1, 2):
            response = await model.complete(messages)
            usage = add_usage(usage, response.usage)
            try:
                plan = self._parse(response.content, question)
            except PlanValidationError as exc:
                error = exc
                context.emit(PipelinePlanInvalid(attempt=attempt, problems=exc.problems))
                messages += [
                    Message.assistant(response.content),
                    Message.user(
                        "That plan is invalid:\n" + "\n".join(f"- {p}" for p in exc.problems)
                        + "\nAnswer with the corrected plan as one JSON object, nothing else."
                    ),
                ]
                continue
            context.emit(PipelinePlan(attempt=attempt, stages=[s.stage_id for s in plan.stages], usage=usage))
            return plan
        assert error is not None
        raise PlanValidationError(["the model's plan was still invalid after one repair round", *error.problems], raw=error.raw)

    def _parse(self, text: str, question: str) -> ExecutionPlan:
        raw = _json_object(text)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise PlanValidationError([f"plan is not valid JSON: {exc}"], raw=text) from None
        if isinstance(data, dict) and not data.get("question"):
            data["question"] = question
        try:
            plan = ExecutionPlan.from_dict(data, tools=self.tools, max_stages=self.max_stages)
        except PlanValidationError as exc:
            exc.raw = text
            raise
        return plan


def _json_object(text: str) -> str:
    """The JSON object in a model's answer (tolerates a ```json fence or a sentence around it)."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    return body[start : end + 1] if start != -1 and end > start else body.strip()
