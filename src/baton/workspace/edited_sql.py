"""Run the SQL of an answer after a person edited it: the same checks as any model-written query.

The page's "Edit SQL" sends the edited text with the turn it came from. ``run_edited_sql``
runs it on the connection of the specialist that answered that turn, through
``baton.specialists.sql.validation.validate_and_run``: the parser safety check (the engine's
own parser where there is one), pre-validation against the schema, the read-only engine
guard with its timeout and row caps, and the role's least-privilege check. Nothing here
trusts the editor more than the model: an edit is untrusted SQL.

Outcomes:

- refused as unsafe: ``EditedSQLRefused`` with ``code="unsafe_sql"`` and the safety rule
  (``rule``: ``write_statement``, ``multiple_statements``, ``dangerous_function`` ...) and
  its reason; nothing ran;
- refused by pre-validation or the engine (an unknown column, a syntax error, a timeout):
  ``EditedSQLRefused`` with the error class as ``code``;
- otherwise an answer dressed like any SQL answer (chart, follow-ups, insights,
  ``baton.viz.presentation.present``), stored as a new turn of the same conversation
  (``record_turn``, as any answer), so its follow-ups ("Show only the top 5") and "Save as
  verified question" work on it.

Decisions: the edited answer's chart has its own title, "<the question> — edited SQL" (also
``metadata["title"]``, which its follow-ups' titles start from). A refused edit is not
stored as a turn (it answered nothing; the page shows the reason beside the editor, where
the person can fix it). The new turn's question reads
"Edited SQL of “<the question>”". Edited SQL longer than ``MAX_SQL_CHARS`` is refused
before it is parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from baton.errors import BatonError
from baton.response import AIMessage, ResponseType
from baton.state.conversations import SessionNotFound

if TYPE_CHECKING:
    from baton.workspace.core import Workspace

MAX_SQL_CHARS = 20_000


class EditedSQLRefused(BatonError):
    """Edited SQL that was not run (unsafe) or did not run (invalid, failed)."""

    def __init__(self, message: str, code: str, rule: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.rule = rule


def _specialist(ws: Workspace, answer: AIMessage) -> Any:
    wanted = answer.meta.get("routed_to") or answer.meta.get("agent")
    agents = ws.catalog.sql_specialists()
    found = next((a for a in agents if a.name == wanted), None)
    if found is None and len(ws.catalog.databases()) == 1 and agents:
        found = agents[0]  # one database: any of its specialists runs it the same way
    if found is None:
        raise EditedSQLRefused("this answer did not come from a SQL specialist of this workspace", "not_sql")
    return found


def _original_question(question: str, answer: AIMessage) -> str:
    return str(answer.metadata.get("edited_from_question") or answer.metadata.get("title") or answer.input or question).strip()


async def run_edited_sql(ws: Workspace, turn_id: str, sql: str) -> AIMessage:
    """Run ``sql`` in place of the SQL of turn ``turn_id`` (module docstring). Raises
    ``SessionNotFound`` for a turn of another workspace and ``EditedSQLRefused``."""
    from baton.specialists.sql.freshness import mark_freshness
    from baton.specialists.sql.validation import validate_and_run
    from baton.viz.presentation import present_async
    from baton.workspace.answer import record_turn

    sql = (sql or "").strip()
    if not sql:
        raise EditedSQLRefused("there is no SQL to run", "empty")
    if len(sql) > MAX_SQL_CHARS:
        raise EditedSQLRefused(f"the SQL is longer than {MAX_SQL_CHARS:,} characters", "too_long")
    found = await ws.sessions.find_turn(ws.name, turn_id)
    if found is None:
        raise SessionNotFound(turn_id)
    session_id, question, previous = found
    agent = _specialist(ws, previous)
    connection = agent.connection
    report = await validate_and_run(sql, number=1, connection=connection, schema=await connection.schema(),
                                    explanation="edited by a person")
    if report.unsafe is not None:
        raise EditedSQLRefused(f"unsafe SQL refused: {report.unsafe.reason}", "unsafe_sql", report.unsafe.rule)
    if report.result is None:
        attempt = report.attempt
        raise EditedSQLRefused(f"the query did not run: {attempt.error}", attempt.error_class or "sql_failed")
    result = report.result
    original = _original_question(question, previous)
    label = f"Edited SQL of “{original}”"
    rows = f"{result.row_count} row{'s' if result.row_count != 1 else ''}" + (" (capped)" if result.truncated else "")
    title = f"{original} — edited SQL"  # its own chart title: these are not the rows the question's answer showed
    message = await present_async(AIMessage(
        content=f"Your edited query: {rows}.", data=result.records(), results=result, query=report.attempt.sql,
        input=title, response_type=ResponseType.SQL_RESULT,
        metadata={"agent": agent.name, "routed_to": agent.name, "connection_id": connection.id, "dialect": connection.dialect,
                  "fast_path": "edited_sql", "llm_calls": 0, "edited_sql": True, "based_on": previous.turn_id,
                  "edited_from_question": original, "title": title, "attempts": [_attempt(report.attempt)], "warnings": report.warnings},
    ))
    message.input = original
    await mark_freshness(message, connection)  # data older than the database's freshness limit: said
    return await record_turn(ws, session_id, label, message)  # stored, remembered and logged as any answer


def _attempt(attempt: Any) -> dict[str, Any]:
    return {"number": attempt.number, "sql": attempt.sql, "outcome": attempt.outcome, "row_count": attempt.row_count,
            "duration_ms": attempt.duration_ms}
