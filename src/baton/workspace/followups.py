"""Follow-ups that refer to the previous answer, answered without a model.

What a follow-up asks is read by ``followup_intents`` (chart type, top or bottom N, sort by
any column, filter to a value, share of total, re-grouping by month/quarter/year,
comparison with the previous period). Then:

- **chart**: the previous rows are re-charted; no query runs. The chart is still validated
  (a pie of 12 months becomes a bar, and says why).
- **everything else**: the previous answer's SQL is rewritten with sqlglot
  (``baton.followup_sql``: a *view* of its base query, so follow-ups compose and every total,
  share and insight is computed over the FULL base result) and run by the specialist that
  answered, through the same safety check, pre-validation and read-only engine as any query.
  Deterministic and exact, so it is preferred even when a model is configured.
- a follow-up of an answer from the semantic layer that only edits it ("by quarter instead",
  "only Epson", "compare with 2024", "top 5") is that edit of its semantic query, compiled
  afresh (``baton.semantic.followups``), before any of the above;
- a follow-up that refers to the answer but asks none of these, or one the SQL does not allow
  (re-grouping an average, by a finer period than the data has), goes to the orchestrator
  when a model is configured; with none, the answer says it needs a model and offers what can
  be done on this result instead.

The answer is dressed here rather than by the specialist: its chart is titled with the
question the conversation started from ("What was Epson revenue by month in 2025? — top 5
by revenue", never "Show only the top 5"), its insights use the full result's totals, and
its suggestions fit the new result and what was already done (no "sort by revenue" on rows
sorted so). A period whose previous row is not the adjacent period gets no comparison.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from baton.agents import AgentContext
from baton.agents.failures import code_of
from baton.errors import BatonError
from baton.followup_sql import ROWS, SHARE, TOTAL, RewriteError, View, build, coarser, compare_sql, regroup_sql, strip_hidden
from baton.response import AIMessage, QueryResult, ResponseType
from baton.workspace.followup_intents import Intent, is_new_question, read_followup

if TYPE_CHECKING:
    from baton.viz.choose import ChartChoice
    from baton.viz.profile import ResultProfile
    from baton.workspace.catalog import Catalog

NEEDS_MODEL = "This follow-up needs a language model, and none is configured"
# metadata["followup"]: rechart, top_n, bottom_n, sort, filter, share, regroup, compare, needs_model
KIND_NAMES = {"top": "top_n", "bottom": "bottom_n"}


def _profile(result: QueryResult) -> ResultProfile:
    from baton.viz.profile import profile_result

    return profile_result(result.columns, result.rows, result.column_types, limit=5000)


def _title(previous: AIMessage) -> str:
    return str(previous.meta.get("title") or previous.input or "").strip()


def _additive(profile: ResultProfile) -> tuple[str, ...]:
    return tuple(c.source for c in profile.measures if c.additive)


def _view_of(previous: AIMessage, additive: Callable[[], tuple[str, ...]]) -> View | None:
    saved = previous.metadata.get("followup_view")
    if isinstance(saved, dict) and saved.get("base"):
        try:
            return View.from_dict(saved)
        except (KeyError, TypeError, ValueError):
            pass
    if not previous.query or previous.results is None:
        return None
    return View(previous.query, previous.meta.get("dialect") or None, measures=additive())


def _measure(profile: Callable[[], ResultProfile], named: str | None) -> str | None:
    if named is not None:
        return named
    measures = profile().measures
    return measures[-1].source if measures else None


def plan(intent: Intent, previous: AIMessage) -> tuple[View, str]:
    """The view answering ``intent`` and a few words saying what it shows."""
    result = previous.results
    if result is None:
        raise RewriteError("the previous answer has no SQL to build on")
    # the previous rows are profiled at most once, and only when the intent needs it
    profile = functools.cache(functools.partial(_profile, result))
    additive = functools.cache(lambda: _additive(profile()))
    view = _view_of(previous, additive)
    if view is None:
        raise RewriteError("the previous answer has no SQL to build on")
    if intent.kind in ("top", "bottom"):
        column = _measure(profile, intent.column)
        if column is None:
            raise RewriteError("the previous result has no number to rank by")
        which = "top" if intent.kind == "top" else "bottom"
        return view.changed(rank=(column, intent.kind == "top"), limit=intent.n, sort=None), f"{which} {intent.n} by {column}"
    if intent.kind == "sort":
        measure_names = {c.source for c in profile().measures}
        descending = intent.descending if intent.descending is not None else intent.column in measure_names
        return view.changed(sort=(intent.column, descending)), f"sorted by {intent.column}{' descending' if descending else ''}"
    if intent.kind == "filter":
        return view.changed(filter=(intent.column, intent.value), rank=None, limit=None), f"{intent.column} {intent.value}"
    if intent.kind == "share":
        column = intent.column or next(iter(additive()), None)
        if column is None or column not in view.measures and column not in additive():
            raise RewriteError("a share of the total needs a measure that adds up (not an average, rate or price)")
        return view.changed(share=column, measures=tuple(dict.fromkeys((*view.measures, column)))), f"share of total {column}"
    profiled = profile()
    if len(profiled.temporal) != 1:
        raise RewriteError(f"{'re-grouping' if intent.kind == 'regroup' else 'a comparison'} needs one time column in the result")
    time = profiled.temporal[0]
    dims = [c.source for c in profiled.dimensions]
    measures = [c.source for c in profiled.measures if not c.source.startswith(("previous_", "change_")) and c.source != SHARE]
    if not measures:
        raise RewriteError("the result has no measure to add up")
    if intent.kind == "regroup":
        if intent.unit == time.time_unit:
            raise RewriteError(f"the result is already by {intent.unit}")
        if intent.unit == "week":
            raise RewriteError("weeks do not add up from months or quarters; by week is a new query")
        unit = intent.unit
        if unit is None or not coarser(time.time_unit, unit):
            raise RewriteError(f"the result is by {time.time_unit}; by {intent.unit} needs finer data, so a new query")
        sql = regroup_sql(view.base, view.dialect, time.source, unit, dims, measures)
        return View(sql, view.dialect, measures=tuple(m for m in measures if m in additive()),
                    grain={"column": unit, "unit": unit}), f"by {unit}"
    if time.time_unit not in ("year", "quarter", "month", "day"):
        raise RewriteError("a comparison with the previous period needs calendar periods (years, quarters, months or days)")
    sql = compare_sql(view.base, view.dialect, time.source, dims, measures[:3])
    return View(sql, view.dialect, grain={"column": time.source, "unit": time.time_unit or ""}), "compared with the previous period"


def _blank_non_adjacent(result: QueryResult) -> int:
    """``previous_*``/``change_*`` set to None where the previous row (in the same series) is
    not the adjacent period; returns how many rows were blanked."""
    from baton.viz.insights import adjacent
    from baton.viz.profile import parse_temporal

    profile = _profile(result)
    if len(profile.temporal) != 1:
        return 0
    time = profile.temporal[0]
    split = [c.index for c in profile.dimensions]
    compared = [i for i, c in enumerate(result.columns) if str(c).startswith(("previous_", "change_"))]
    last: dict[tuple[Any, ...], Any] = {}
    blanked = 0
    for row in result.rows:
        key = tuple(row[i] for i in split)
        moment = parse_temporal(row[time.index], year_ok=True)
        before = last.get(key)
        if moment is not None and (before is None or not adjacent(before, moment[0], time.time_unit)):
            if any(row[i] is not None for i in compared):
                blanked += 1
            for i in compared:
                row[i] = None
        last[key] = moment[0] if moment else None
    return blanked


def _dress(answer: AIMessage, previous: AIMessage, question: str, kind: str, view: View, what: str) -> AIMessage:
    """Strip the hidden totals, then chart (titled with the conversation's question),
    insights over the full result and suggestions that fit."""
    from baton.viz.insights import find_insights
    from baton.viz.suggest import fitting_followups

    raw = answer.results
    assert raw is not None
    keep, hidden = strip_hidden(raw.columns, raw.rows)
    result = QueryResult([raw.columns[i] for i in keep], [[row[i] for i in keep] for row in raw.rows],
                         [raw.column_types[i] for i in keep if i < len(raw.column_types)], raw.truncated, raw.execution_ms)
    blanked = _blank_non_adjacent(result) if kind == "compare" else 0
    totals = {name[len(TOTAL):]: value for name, value in hidden.items() if name.startswith(TOTAL)}
    title = _title(previous)
    chart_title = f"{title} — {what}" if title else what[0].upper() + what[1:]
    choice = _chart(result, chart_title, kind, view)
    insights = find_insights(result, totals=totals or None, total_rows=hidden.get(ROWS))
    shown = result.row_count
    lead = f"{what[0].upper()}{what[1:]}: {shown} row{'s' if shown != 1 else ''}"
    if kind in ("top", "bottom") and hidden.get(ROWS):
        lead += f" of {hidden[ROWS]}"
    lead += "."
    if blanked:
        lead += f" {blanked} period{'s have' if blanked != 1 else ' has'} no adjacent previous period, so no comparison."
    finding = str(insights[0].get("text") or "") if insights else ""
    done = {"top": "Show only the top", "bottom": "Show only the top", "compare": "Compare with", "share": "Show percentage"}
    suggestions = [s for s in fitting_followups(result, query=view.base, dialect=view.dialect, viz_type=choice.viz_type)
                   if not (kind in done and s.startswith(done[kind]))]
    if kind in ("regroup", "compare"):  # the base changed: later follow-ups are titled with what it now is
        title = chart_title
    shown_sql = build(view, hidden=False)  # the rows shown, without the internal totals: what is shown and edited
    attempts = answer.metadata.get("attempts")
    if isinstance(attempts, list):
        attempts = [{**a, "sql": shown_sql} if isinstance(a, dict) and a.get("sql") == answer.query else a for a in attempts]
    return answer.copy(
        content=lead + (f" {finding[0].upper()}{finding[1:]}" if finding else ""),
        query=shown_sql, results=result, data=result.records(), viz_type=choice.viz_type, viz_config=choice.viz_config,
        insights=insights, suggested_followups=suggestions[:3], input=question,
        metadata={**answer.metadata, "followup": KIND_NAMES.get(kind, kind), "based_on": previous.turn_id, "llm_calls": 0, "title": title,
                  "followup_view": view.to_dict(), "attempts": attempts, "routed_to": previous.meta.get("routed_to") or previous.meta.get("agent")},
    )


def _chart(result: QueryResult, title: str, kind: str, view: View) -> ChartChoice:
    """The chart of a follow-up's result: a share answer draws its shares (a pie when every
    row is there and it fits, else bars), anything else the chart its shape calls for."""
    from baton.viz import choose_chart

    if kind == "share" and SHARE in result.columns:
        shares = [i for i, c in enumerate(result.columns) if c == SHARE or c not in (view.share,)]
        profile = _profile(result)
        keep = [i for i in shares if result.columns[i] == SHARE or any(c.index == i for c in profile.dimensions + profile.temporal)]
        projected = QueryResult([result.columns[i] for i in keep], [[row[i] for i in keep] for row in result.rows])
        return choose_chart(projected, question=title, requested=None if view.limit is None and view.filter is None else "bar")
    return choose_chart(result, question=title)


def rechart(previous: AIMessage, question: str, requested: str) -> AIMessage | None:
    """The previous rows with the requested chart (validated for their shape)."""
    results = previous.results
    if results is None or not results.rows:
        return None
    from baton.viz import choose_chart
    from baton.viz.suggest import fitting_followups

    title = _title(previous)
    choice = choose_chart(results, question=title or None, requested=requested)
    offers = fitting_followups(results, query=previous.query, dialect=previous.meta.get("dialect"), viz_type=choice.viz_type)
    return previous.copy(
        content=f"Here is the previous result as a {choice.viz_type.replace('_', ' ')}{'' if choice.viz_type == 'table' else ' chart'}."
        + ("" if choice.viz_type == requested else f" ({choice.reason})"),
        viz_type=choice.viz_type,
        viz_config=choice.viz_config,
        input=question,
        turn_id=uuid.uuid4().hex,
        created_at=dt.datetime.now(dt.UTC),
        token_usage={},
        tool_call_log=[],
        workflow_id=None,
        suggested_followups=offers[:3],
        metadata={**previous.metadata, "followup": "rechart", "based_on": previous.turn_id, "llm_calls": 0, "title": title},
    )


def needs_model(previous: AIMessage, question: str, reason: str) -> AIMessage:
    """A follow-up nothing here can answer, with no model configured: say so, and offer what
    can be done on this result."""
    from baton.viz.suggest import fitting_followups

    result = previous.results
    offers = fitting_followups(result, query=previous.query, dialect=previous.meta.get("dialect"),
                               viz_type=previous.viz_type) if result is not None else []
    text = f"{NEEDS_MODEL} ({reason})." + (" On this result I can: " + "; ".join(offers) + "." if offers else "") + \
        " To ask anything else, set BATON_MODEL and restart."
    return AIMessage(content=text, input=question, response_type=ResponseType.TEXT, suggested_followups=offers[:3],
                     metadata={"followup": "needs_model", "based_on": previous.turn_id, "llm_calls": 0, "mode": "direct"})


async def _run_on_layer(agent: Any, question: str, sql: str, context: AgentContext) -> AIMessage:
    """The rewritten SQL of a semantic answer, run by its layer through the same safety check,
    pre-validation and read-only engine (a semantic agent reads questions, not SQL)."""
    layer = agent.layer
    report = await layer.run_sql(sql, "Ran the follow-up of a semantic answer.")
    context.emit(report.attempt.event(layer.connection.id))
    if report.result is None:
        error = f"the follow-up query failed: {report.attempt.error}"
        return AIMessage.failed(report.attempt.error_class or "sql_failed", error, f"The follow-up query failed: {report.attempt.error}")
    return AIMessage(content="", data=report.result.records(), results=report.result, query=report.attempt.sql, input=question,
                     response_type=ResponseType.SQL_RESULT,
                     metadata={"agent": agent.name, "connection_id": layer.connection.id, "dialect": layer.dialect,
                               "fast_path": "given_sql", "llm_calls": 0, "attempts": [report.attempt.to_dict()]})


def _followup_code(exc: BaseException) -> str:
    """A failed follow-up query's code: a dependency's (the database down) or the SQL's own error class."""
    code = code_of(exc)
    return code if code != "agent_failed" else str(getattr(exc, "error_class", None) or "sql_failed")


async def answer_followup(catalog: Catalog, previous: AIMessage | None, question: str, context: AgentContext) -> AIMessage | None:
    """The follow-up's answer, or None when the question is not such a follow-up (or a
    model should answer it). ``context`` is the request's; a failure is an error answer."""
    if is_new_question(question):  # "How many orders by month in 2025?" asks anew, whatever came before
        return None
    if previous is not None and previous.meta.get("semantic_query"):  # an edit of its semantic query (baton.semantic)
        from baton.semantic.followups import semantic_followup

        edited: AIMessage | None = await semantic_followup(*catalog.semantic_answerer(), previous, question, context)
        if edited is not None:
            return edited
    if previous is None or previous.results is None:
        return None
    intent = read_followup(question, previous.results)
    if intent is None:
        return None
    if intent.kind == "chart":
        return await asyncio.to_thread(rechart, previous, question, intent.chart or "bar")  # charting a large result: off the loop
    if intent.kind == "other":
        return None if catalog.routes_with_model() else needs_model(previous, question, "it asks more than a chart, a ranking, "
                                                                  "a sort, a filter, a share, a re-grouping or a comparison")
    try:
        view, what = plan(intent, previous)
        sql = build(view)
    except RewriteError as exc:
        return None if catalog.routes_with_model() else needs_model(previous, question, str(exc))
    agent_name = previous.meta.get("routed_to") or previous.meta.get("agent")
    specialist = catalog.specialist(agent_name)
    if specialist is None:
        return None
    try:
        if specialist.semantic_layer is not None and not specialist.runs_sql:  # a semantic answer: its layer runs the rewrite
            answer = await _run_on_layer(specialist.agent, question, sql, context)
        else:
            answer = await specialist.agent.ask(question, context=context.derive(user_question=question), sql=sql)
    except BatonError as exc:
        answer = AIMessage.failed(_followup_code(exc), str(exc), f"The follow-up query failed: {exc}")
    if answer.error or answer.results is None:
        answer.metadata.update(followup=KIND_NAMES.get(intent.kind, intent.kind), based_on=previous.turn_id, routed_to=agent_name,
                               llm_calls=0)
        return answer
    return await asyncio.to_thread(_dress, answer, previous, question, intent.kind, view, what)  # off the loop, as present_async
