"""``SemanticAgent``: a specialist that answers metric questions from the semantic model, with no model.

The no-model router (``LexicalRouter.semantic``) sends it every question its parser
claims (``claims``: the question is about a metric of the model). It then:

- **parses** the question (``parser.py``) and, when exactly one reading is valid, compiles
  it, runs it through the connection's validation pass (safety check, schema
  pre-validation, read-only engine) and answers with the rows, the chart, the SQL and the
  semantic query it ran, said in the answer's text ("Semantic query: revenue by quarter;
  where business unit = Epson and time in 2025") and kept in ``metadata["semantic_query"]``
  (its dict form: what follow-ups edit);
- **asks back** otherwise: the readings it considered (or the nearest answerable ones) as
  clickable ``suggested_followups``, in ``metadata["did_you_mean"]`` (the shape of the
  verified questions' "Did you mean", which surfaces already show as clickable suggestions)
  and in ``metadata["semantic_ask_back"]`` (reason, readings with their semantic queries,
  unknown words). Never a table for a guess.

A caller that already holds the query (a follow-up's edit) passes ``semantic_query=``.
"""

from __future__ import annotations

import time
from typing import Any

from baton.agents import AgentContext, AgentResult, BaseAgent
from baton.numbers import format_number
from baton.response import AIMessage, ResponseType
from baton.semantic.layer import SemanticLayer
from baton.semantic.parser import AskBack, NotMetric, Parsed
from baton.semantic.query import SemanticQuery, SemanticQueryError

FAST_PATH = "semantic_layer"


class SemanticAgent(BaseAgent):
    name = "metrics"
    description = ("Answers metric questions (revenue, costs, profit, counts ... by any dimension, filter and time grain) "
                   "from the workspace's semantic model, deterministically.")

    def __init__(self, layer: SemanticLayer, *, name: str | None = None, description: str | None = None) -> None:
        super().__init__(name, description)
        self.layer = layer

    async def configure(self) -> None:
        await self.layer.ready()

    async def claims(self, question: str) -> bool:
        """Whether ``question`` is about a metric of the model (answered or asked back here)."""
        parser = await self.layer.ready()
        return not isinstance(parser.parse(question), NotMetric)

    async def examples(self, limit: int = 6) -> list[str]:
        """Questions this model answers, each checked to read back (``examples.py``)."""
        from baton.semantic.examples import metric_examples

        return metric_examples(self.layer.model, await self.layer.ready(), limit)

    async def run(self, context: AgentContext, **kwargs: Any) -> AgentResult:
        started = time.perf_counter()
        question = str(kwargs.get("question") or context.user_question or "").strip()
        given = kwargs.get("semantic_query")
        parser = await self.layer.ready()
        if given is not None:
            try:
                query = self.layer.resolve_values(given if isinstance(given, SemanticQuery) else SemanticQuery.from_dict(given))
            except SemanticQueryError as exc:
                return self._error(question, str(exc), "semantic_query_invalid", started)
        else:
            outcome = parser.parse(question)
            if isinstance(outcome, NotMetric):
                return self._error(question, "this is not a question about a metric of the semantic model", "not_a_metric", started)
            if isinstance(outcome, AskBack) and outcome.reason == "not_computed":  # nothing to ask: a refusal, by name
                return self._error(question, outcome.message, "metric_not_computed", started)
            if isinstance(outcome, AskBack):
                return self._ask_back(question, outcome, started)
            assert isinstance(outcome, Parsed)
            query = outcome.query
        return await self.answer(context, question, query, started)

    async def answer(self, context: AgentContext, question: str, query: SemanticQuery, started: float | None = None,
                     *, extra: dict[str, Any] | None = None) -> AgentResult:
        started = started if started is not None else time.perf_counter()
        model = self.layer.model
        try:
            compiled, report = await self.layer.run(query)
        except SemanticQueryError as exc:
            return self._error(question, str(exc), "semantic_query_invalid", started)
        context.emit(report.attempt.event(self.layer.connection.id))
        if report.result is None:  # an unsafe query's attempt carries the verdict (error_class unsafe_sql)
            reason = report.attempt.error
            code = report.attempt.error_class or "sql_failed"
            return self._error(question, f"the semantic query failed: {reason}", code, started)
        said = compiled.query.describe(model)
        result = report.result
        if result.row_count == 1 and len(result.columns) == 1:  # the value itself, shown with the metric's decimals
            value = result.rows[0][-1]  # None: no rows matched (a SUM over nothing), said in words, never ": ."
            shown = "no data" if value is None else format_number(value, decimals=model.metric(compiled.query.metrics[-1]).decimals)
            lead = f"{said[0].upper()}{said[1:]}: {shown}."
        else:
            lead = f"{said[0].upper()}{said[1:]}: {result.row_count} row{'s' if result.row_count != 1 else ''}."
        message = AIMessage(
            content=lead, data=result.records(), query=compiled.sql, query_explanation=f"Semantic query: {said}", results=result,
            response_type=ResponseType.SQL_RESULT, viz_type="text", input=question, workflow_id=context.workflow_id,
            metadata={"agent": self.name, "connection_id": self.layer.connection.id, "dialect": self.layer.dialect,
                      "semantic_query": compiled.query.to_dict(), "semantic_model": model.name, "fast_path": FAST_PATH,
                      "llm_calls": 0, "attempts": [report.attempt.to_dict()], "warnings": list(report.warnings), **(extra or {})},
        )
        from baton.specialists.sql.freshness import mark_freshness
        from baton.viz.presentation import present_async

        await mark_freshness(message, self.layer.connection)  # data older than the freshness limit: said
        message = await present_async(message)  # a worker thread: a large result takes a while to dress
        if len(message.suggested_followups) < 3:  # what only the model can do: a finer period, time added
            from baton.semantic.edits import offers

            more = [o for o in offers(compiled.query, await self.layer.ready()) if o not in message.suggested_followups]
            message.suggested_followups = [*message.suggested_followups, *more][:3]
        if compiled.query.limit is not None:  # a top N: shares are of the FULL result, not of the rows shown
            message.insights = await self._full_insights(compiled.query, result)
        finding = str(message.insights[0].get("text") or "").strip() if message.insights else ""
        text = lead + (f" {finding[0].upper()}{finding[1:]}" if finding else "")
        message.content = f"{text}\n\nSemantic query: {said}."
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message,
                           execution_time=time.perf_counter() - started, metadata={"semantic_query": compiled.query.to_dict()})

    async def _full_insights(self, query: SemanticQuery, shown: Any) -> list[dict[str, Any]]:
        """Insights of a top-N answer with the totals of the whole ranking: the database sums
        each additive metric over the query without its limit, and counts its rows, in one
        aggregate query (``totals.totals_query``): exact however long the ranking."""
        from dataclasses import replace

        from baton.semantic.totals import TOTAL_ROWS, totals_query
        from baton.viz.insights import find_insights

        model = self.layer.model
        additive = [m for m in query.metrics if model.metric(m).type == "simple"
                    and model.measure(model.metric(m).measure or "").agg in ("sum", "count")]
        totals: dict[str, Any] = {}
        total_rows = None
        if additive:
            whole = self.layer.compile(replace(query, limit=None))
            report = await self.layer.run_sql(totals_query(whole, additive),
                                              f"Totals of: {whole.query.describe(model)}")
            if report.result is not None and report.result.rows:
                row = dict(zip(report.result.columns, report.result.rows[0], strict=True))
                total_rows = int(row[TOTAL_ROWS] or 0)
                totals = {name: float(row[name] or 0) for name in additive}
        found = find_insights(shown, totals=totals or None, total_rows=total_rows)
        return [i for i in found if totals or "share" not in str(i.get("kind", ""))]

    def _ask_back(self, question: str, outcome: AskBack, started: float) -> AgentResult:
        model = self.layer.model
        listed = "\n".join(f"- {q}" for q in outcome.questions)
        text = outcome.message + (f"\n\n{listed}" if listed else "")
        readings = [{"question": q, "semantic_query": r.to_dict(), "described": r.describe(model)}
                    for q, r in zip(outcome.questions, outcome.readings)]
        # The readings are also the answer's one artifact: structured output that makes the ask-back
        # pass through the orchestrator whole (suggestions and metadata kept; see baton.agents.compose).
        message = AIMessage(
            content=text, input=question, response_type=ResponseType.TEXT, suggested_followups=list(outcome.questions),
            artifacts=[{"type": "semantic_ask_back", "reason": outcome.reason, "readings": readings}],
            metadata={"agent": self.name, "fast_path": FAST_PATH, "llm_calls": 0, "mode": "direct",
                      "semantic_ask_back": {"reason": outcome.reason, "readings": readings, "unknown": list(outcome.unknown)},
                      # the same shape as the verified questions' "Did you mean" (the page makes them clickable)
                      "did_you_mean": [{"question": q, "agent": self.name, "semantic_query": r.to_dict()}
                                       for q, r in zip(outcome.questions, outcome.readings)]},
        )
        return AgentResult(agent_name=self.name, task=question, result=text, ai_message=message,
                           execution_time=time.perf_counter() - started, metadata={"semantic_ask_back": outcome.reason})

    def _error(self, question: str, error: str, code: str, started: float) -> AgentResult:
        return AgentResult(agent_name=self.name, task=question, status="error", result=f"Error ({code}): {error}", error=error,
                           error_type=code, execution_time=time.perf_counter() - started)


__all__ = ["FAST_PATH", "SemanticAgent"]
