"""One pass of the validation loop (seed 002 "Validation Loop") over one SQL candidate.

Order, and why it differs from the seed's listing in one place: the safety check runs
*first*, before pre-validation, so that ``DROP TABLE missing_table`` fails immediately as
unsafe instead of being sent back for a "did you mean" repair (the seed's rule is that
unsafe SQL is never retried). Then:

1. deterministic rewrites from active learnings (re-checked for safety; dropped, with a
   warning, when the rewritten query no longer matches the schema: a stale learning);
2. pre-validation against the introspected schema (``prevalidate.py``) -> repair;
3. EXPLAIN (optional) -> repair, once per distinct query: the same query sent again after a
   plan warning runs (the model insists the whole table is needed);
4. execution under the engine guard -> classified error -> repair (retryable) or stop;
5. post-validation: zero rows (a note to the model and a warning), slow (> ``slow_query_s``),
   truncated by the caps.

No model is called here; ``agent.py`` decides what to do with the report.

A query vetted once is not parsed again (issue 13: the checks were a third of a verified
answer's CPU): the safety verdict, the pre-validation and the tables read of a query that
passed are kept in a small table keyed by everything they depend on — the SQL text, the
dialect, the relation policy and the schema object the connection holds (a re-introspected
schema is a new object, so a new key). Only passing queries are kept; a refused or invalid
one is checked again every time.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from baton.response import QueryResult
from baton.specialists.sql.classify import ClassifiedError, ErrorClass, SQLExecutionError
from baton.specialists.sql.connection import SQLConnection
from baton.specialists.sql.explain import check_plan
from baton.specialists.sql.learnings import ExtractedLearning
from baton.specialists.sql.prevalidate import SchemaIssue, format_issues_for_repair, prevalidate
from baton.specialists.sql.prompts import relevant_tables, result_preview, schema_text
from baton.specialists.sql.repair import error_feedback, plan_feedback, zero_rows_note
from baton.specialists.sql.result import QueryAttempt
from baton.specialists.sql.rewrite import apply_learnings
from baton.specialists.sql.safety import SafetyVerdict, check_safety
from baton.specialists.sql.schema import SchemaInfo
from baton.specialists.sql.sqlshape import shape_of

_VETTED: OrderedDict[tuple, tuple[SchemaInfo, SafetyVerdict, list[str]]] = OrderedDict()
VETTED_ENTRIES = 256

_ISSUE_CLASS = {"unknown_table": "table_not_found", "unknown_column": "column_not_found",
                "ambiguous_column": "ambiguous_column", "parse_error": "syntax_error"}


@dataclass
class AttemptReport:
    attempt: QueryAttempt
    feedback: str  # what the model reads next
    result: QueryResult | None = None
    unsafe: SafetyVerdict | None = None
    fatal: ClassifiedError | None = None
    warnings: list[str] = field(default_factory=list)


async def validate_and_run(
    sql: str,
    *,
    number: int,
    connection: SQLConnection,
    schema: SchemaInfo,
    explanation: str = "",
    learnings: Sequence[ExtractedLearning] = (),
    plan_warned: set[str] | None = None,
) -> AttemptReport:
    started = time.perf_counter()
    dialect = connection.dialect
    attempt = QueryAttempt(number=number, sql=sql, original_sql=sql, outcome="error", explanation=explanation)

    policy = connection.relation_policy
    key = (sql, dialect, policy, id(schema))
    vetted = _VETTED.get(key)
    if vetted is not None and vetted[0] is not schema:
        vetted = None  # an id reused by another schema object
    known_tables = vetted[2] if vetted is not None else None

    def done(report: AttemptReport) -> AttemptReport:
        attempt.duration_ms = round((time.perf_counter() - started) * 1000, 3)
        if known_tables is not None and attempt.sql == sql:
            attempt.tables = list(known_tables)
        else:
            attempt.tables = sorted(shape_of(attempt.sql, dialect, schema).tables)
        return report

    if vetted is not None:
        verdict = vetted[1]
        _VETTED.move_to_end(key)
    else:
        verdict = check_safety(sql, dialect, relations=policy)
        if not verdict.safe:
            attempt.outcome, attempt.error_class, attempt.error = "unsafe", "unsafe_sql", verdict.reason
            return done(AttemptReport(attempt, f"Refused: {verdict.reason}", unsafe=verdict))

        # Reuse sqlglot's parse. Without one, only the engine's own parser could read the query
        # (SQL/JSON, XML, geometric operators...): the engine reports unknown names when it runs.
        issues = prevalidate(verdict.statement, schema, dialect) if verdict.statement is not None else []
        if issues:
            return done(_invalid(attempt, issues, schema))
        known_tables = sorted(shape_of(sql, dialect, schema).tables)
        _VETTED[key] = (schema, verdict, known_tables)
        while len(_VETTED) > VETTED_ENTRIES:
            _VETTED.popitem(last=False)

    warnings: list[str] = []
    rewrite = apply_learnings(sql, learnings, dialect, row_cap=connection.options.row_cap)
    if rewrite.changed:
        if check_safety(rewrite.sql, dialect, relations=policy).safe and not prevalidate(rewrite.sql, schema, dialect):
            attempt.sql, attempt.rewrites = rewrite.sql, rewrite.applied
        else:
            warnings.append(f"learned rewrite {rewrite.applied} skipped: it no longer matches the schema")
    run_sql = attempt.sql

    if connection.options.explain and (plan_warned is None or run_sql not in plan_warned):
        try:
            check = await check_plan(connection, run_sql, schema)
        except SQLExecutionError as err:
            if err.error_class is ErrorClass.TIMEOUT:
                check = None  # EXPLAIN itself was slow: let the real run judge
            else:
                return done(_failed(attempt, err.error, run_sql, schema, connection))
        if check is not None and not check.ok:
            if plan_warned is not None:
                plan_warned.add(run_sql)
            attempt.outcome, attempt.error_class = "plan_rejected", "full_scan"
            attempt.error = "full scan of " + ", ".join(s.table for s in check.flagged)
            return done(AttemptReport(attempt, plan_feedback(check, schema), warnings=warnings))

    try:
        result = await connection.execute_readonly(run_sql)
    except SQLExecutionError as err:
        return done(_failed(attempt, err.error, run_sql, schema, connection))

    attempt.outcome, attempt.row_count, attempt.truncated = "success", result.row_count, result.truncated
    attempt.result_preview = [list(r) for r in result.rows[:5]]
    notes = [result_preview(result)]
    if result.row_count == 0:
        warnings.append("the query returned no rows")
        notes.append(zero_rows_note())
    if result.execution_ms > connection.options.slow_query_s * 1000:
        warnings.append(f"slow query: {result.execution_ms / 1000:.1f} s")
    if result.truncated:
        warnings.append(f"result capped at {result.row_count} rows")
    if attempt.rewrites:
        notes.append("(Applied learned rules before running: " + ", ".join(attempt.rewrites) + ".)")
    attempt.warnings = warnings
    return done(AttemptReport(attempt, "\n".join(notes), result=result, warnings=warnings))


def _invalid(attempt: QueryAttempt, issues: list[SchemaIssue], schema: SchemaInfo) -> AttemptReport:
    attempt.outcome = "invalid"
    attempt.error_class = _ISSUE_CLASS.get(issues[0].kind, "other")
    attempt.error = "; ".join(i.message for i in issues)
    attempt.missing_names = [i.name for i in issues if i.name]
    shape = shape_of(attempt.sql, schema.dialect, schema)
    related = [t for name in sorted(shape.tables) if (t := schema.table(name)) is not None]
    for issue in issues:
        for suggestion in issue.suggestions:
            table = schema.table(suggestion.split(".")[0])
            if table is not None and table not in related:
                related.append(table)
    if not related:
        related = relevant_tables(schema, attempt.sql, 6)
    feedback = format_issues_for_repair(issues) + "\nRelevant schema:\n" + schema_text(schema, related[:8])
    return AttemptReport(attempt, feedback)


def _failed(attempt: QueryAttempt, error: ClassifiedError, sql: str, schema: SchemaInfo, connection: SQLConnection) -> AttemptReport:
    attempt.outcome, attempt.error_class, attempt.error = "error", str(error.error_class), error.message
    if error.name:
        attempt.missing_names = [error.name]
    if not error.error_class.retryable:
        return AttemptReport(attempt, f"The database refused the query: {error.error_class} ({error.message}).", fatal=error)
    return AttemptReport(attempt, error_feedback(error, sql, schema, timeout_s=connection.options.statement_timeout_s))
