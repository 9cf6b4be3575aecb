"""Follow-ups that refer to the previous answer, answered without a new LLM call.

- "Show this as a pie chart" (bar, line, scatter, table, ...): the previous answer's rows are
  re-charted; no query runs and no model is asked. The chart is still validated, so a pie
  of 30 slices becomes a bar (``baton.viz.choose_chart``).
- "Show only the top 5": the previous SQL is wrapped (``SELECT * FROM (<previous>) ORDER BY
  <its last numeric column> DESC LIMIT 5``) and run by the specialist that answered, through
  the same safety check, pre-validation and read-only engine as any query. Deterministic
  and exact, so it is preferred even when a model is configured.

Anything else goes to the orchestrator with the conversation as history.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from baton.agents import AgentContext
from baton.errors import BatonError
from baton.response import AIMessage, QueryResult, ResponseType
from baton.verified import content_words

_CHART = re.compile(
    r"\b(?:show|display|draw|plot|make|turn|render|view|see|put)\b.*?\b(?:as|into|in|like)\s+(?:an?\s+)?"
    r"(pie|bar|line|scatter|area|table|big[- ]number)(?:\s+(?:chart|graph|plot|view))?\b",
    re.IGNORECASE,
)
_TOP = re.compile(r"\b(?:top|first|best|largest|biggest)\s+(\d+|three|five|ten)\b", re.IGNORECASE)
_NUMBERS = {"three": 3, "five": 5, "ten": 10}
_BACK_REFERENCE = re.compile(r"\b(?:this|that|it|these|those|same|previous|above|them)\b", re.IGNORECASE)
# Words a follow-up may use without asking something new.
_FOLLOWUP_WORDS = frozenset(
    "show display draw plot make turn render view see put as into in like an a chart graph pie bar line scatter "
    "area table big number only just top first best largest biggest give keep limit result row please now "
    "instead can could you me i want three five ten".split()
)
MAX_FOLLOWUP_CHARS = 200  # a follow-up is short; longer text is a new question (and bounds the regex work)


def _refers_back(question: str) -> bool:
    """True when the question points at the previous answer ("this", "these", ...) or adds
    no words of its own: "Show the top 10 products" is a new question, "Show only the top 5"
    and "Show this as a pie chart" are not."""
    if _BACK_REFERENCE.search(question):
        return True
    return not (content_words(question) - _FOLLOWUP_WORDS - {w for w in content_words(question) if w.isdigit()})


def chart_request(question: str) -> str | None:
    if len(question) > MAX_FOLLOWUP_CHARS or not _refers_back(question):
        return None
    match = _CHART.search(question)
    return match.group(1).lower().replace(" ", "_").replace("-", "_") if match else None


def top_n_request(question: str) -> int | None:
    if len(question) > MAX_FOLLOWUP_CHARS or not _refers_back(question):
        return None
    match = _TOP.search(question)
    if not match or not re.search(r"\b(only|just|show|give|keep|limit)\b", question, re.IGNORECASE):
        return None
    raw = match.group(1).lower()
    return _NUMBERS.get(raw) or int(raw)


def rechart(previous: AIMessage, question: str, requested: str) -> AIMessage | None:
    """The previous rows with the requested chart (validated for their shape)."""
    results = previous.results
    if results is None or not results.rows:
        return None
    from baton.viz import choose_chart

    choice = choose_chart(results, question=question, requested=requested)
    return previous.copy(
        content=f"Here is the previous result as a {choice.viz_type.replace('_', ' ')} chart."
        + ("" if choice.viz_type == requested else f" ({choice.reason})"),
        viz_type=choice.viz_type,
        viz_config=choice.viz_config,
        input=question,
        turn_id=uuid.uuid4().hex,
        created_at=dt.datetime.now(dt.UTC),
        token_usage={},
        tool_call_log=[],
        workflow_id=None,
        suggested_followups=[],
        metadata={**previous.metadata, "followup": "rechart", "based_on": previous.turn_id, "llm_calls": 0},
    )


def top_n_sql(previous: AIMessage, n: int) -> str | None:
    """The previous SQL limited to its top ``n`` rows by its last numeric column."""
    results: QueryResult | None = previous.results
    if not previous.query or results is None:
        return None
    measure = _last_numeric_column(results)
    if measure is None:
        return None
    import sqlglot
    from sqlglot import exp

    dialect = previous.metadata.get("dialect") or None
    try:
        inner = sqlglot.parse_one(previous.query, read=dialect)
    except sqlglot.errors.ParseError:
        return None
    wrapped = (
        exp.select("*")
        .from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("previous"))))
        .order_by(exp.Ordered(this=exp.column(measure, quoted=True), desc=True))
        .limit(n)
    )
    return wrapped.sql(dialect=dialect)


def _last_numeric_column(results: QueryResult) -> str | None:
    for index in range(len(results.columns) - 1, -1, -1):
        values = [row[index] for row in results.rows[:50] if row[index] is not None]
        if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return results.columns[index]
    return None


async def answer_followup(orchestrator, previous: AIMessage | None, question: str, context: AgentContext) -> AIMessage | None:
    """The follow-up's answer, or None when the question is not such a follow-up. ``context``
    is the request's (workspace, tracker); a failure is an error answer, never an exception."""
    if previous is None:
        return None
    requested = chart_request(question)
    if requested:
        return rechart(previous, question, requested)
    n = top_n_request(question)
    if n is None:
        return None
    sql = top_n_sql(previous, n)
    agent_name = previous.metadata.get("routed_to") or previous.metadata.get("agent")
    tool = next((t for t in orchestrator.agent_tools.values() if t.agent.name == agent_name), None)
    if sql is None or tool is None:
        return None
    try:
        answer = await tool.agent.ask(question, context=context.derive(user_question=question), sql=sql)
    except BatonError as exc:
        answer = AIMessage(content=f"The follow-up query failed: {exc}", error=str(exc), response_type=ResponseType.ERROR)
    answer.metadata.update(followup="top_n", based_on=previous.turn_id, routed_to=agent_name)
    return answer
