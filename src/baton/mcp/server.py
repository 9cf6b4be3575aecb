"""The workspace as an MCP server: tools and resources over ``Workspace``, nothing more.

``build_server(workspace)`` returns an SDK ``MCPServer`` whose handlers only adapt the
workspace: ``ask`` is ``Workspace.answer_stream`` (the one answer path, with sessions,
follow-ups, memory and logs), everything else reads what the workspace already has.

Tools: ``ask`` (question, optional session → the answer's text, and as structured content
its rows, SQL, chart spec and sources; the chart also as a PNG image), ``list_specialists``,
``check_sql`` (the safety verdict, with the workspace's relation policy when it has a SQL
connection), ``search_memory``, ``list_verified_questions``. Resources:
``baton://workspace/schema`` and ``baton://workspace/verified-questions`` (JSON).

Decisions written down here (the issue was silent):
- Progress: every event of the answer except ``llm.token`` (one per token would drown the
  client) becomes a progress notification, numbered in order, its message naming the step.
- Cancellation: the SDK cancels the handler when the client cancels (or, over HTTP, goes
  away); cancelling the handler closes the answer stream, which cancels the question.
- MCP has no "accepts images" capability, so ``ask`` has a ``chart_image`` flag (default
  true): a client that shows no images, or wants no PNG cost, passes false. A chart that
  cannot be rendered leaves the answer intact, with ``chart_image_error`` saying why.
- A failed answer is a failed tool call: ``isError`` with ``error: {type, message}`` in the
  structured content (``shapes.py``). Bad input (an empty or over-long question, SQL or
  search) is refused the same way, typed, before anything runs.
- ``search_memory`` is lexical, like the memory bundle: the workspace's active records
  scored by shared words with the query (confidence breaks ties).
- ``check_sql`` with SQL connections checks against the named one (default: the first),
  with its dialect and relation policy; ``dialect`` is only for workspaces without one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations

from baton.events import Event
from baton.mcp.shapes import plain, structured_answer
from baton.response import AIMessage
from baton.workspace.examples import sql_connections

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 20_000
MAX_SQL_CHARS = 100_000
MAX_QUERY_CHARS = 2_000
MAX_CHART_SPEC_BYTES = 5_000_000
MEMORY_CANDIDATES = 2_000
SCHEMA_URI = "baton://workspace/schema"
VERIFIED_URI = "baton://workspace/verified-questions"
QUIET_EVENTS = frozenset({"llm.token"})
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def build_server(workspace: Any, *, name: str | None = None) -> MCPServer:
    """An MCP server over ``workspace`` (module docstring). Building opens nothing."""
    with _keep_logging_config():
        server = MCPServer(
            name=name or f"baton-{workspace.name}", version="0.1.0", log_level="WARNING",
            instructions=(f"Baton workspace {workspace.name!r}: {workspace.description or 'ask questions of its data'}. "
                          "Use `ask` for questions in plain language; its structured content holds the rows, SQL, "
                          "chart spec and sources."),
        )
    _register_tools(server, workspace)
    _register_resources(server, workspace)
    return server


@contextlib.contextmanager
def _keep_logging_config() -> Iterator[None]:
    """``MCPServer()`` calls ``logging.basicConfig`` (a rich handler on the root logger) when
    the root logger has no handler yet; a library must not decide the host's logging, so a
    placeholder handler is present while it is built."""
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    added = not root.handlers
    if added:
        root.addHandler(placeholder)
    try:
        yield
    finally:
        if added:
            root.removeHandler(placeholder)


def refused(error_type: str, message: str, **extra: Any) -> CallToolResult:
    """A typed failure as a tool result (``extra``: more fields of the error)."""
    return CallToolResult(content=[TextContent(type="text", text=f"Error ({error_type}): {message}")],
                          structured_content={"error": {"type": error_type, "message": message, **extra}}, is_error=True)


def _json_result(value: dict[str, Any], text: str | None = None) -> CallToolResult:
    data = plain(value)
    return CallToolResult(content=[TextContent(type="text", text=text if text is not None else json.dumps(data, ensure_ascii=False))],
                          structured_content=data)


def describe(event: Event) -> str:
    """A progress message for ``event``: its type and whom it concerns."""
    data = event.data
    who = data.get("agent") or data.get("tool") or data.get("name") or data.get("stage")
    extra = f" ({data['status']})" if isinstance(data.get("status"), str) else ""
    return f"{event.type}: {who}{extra}" if who else f"{event.type}{extra}"


async def answer_result(message: AIMessage, *, chart_image: bool = True) -> CallToolResult:
    """The answer as a tool result: Markdown text, structured content, the chart as PNG."""
    from baton.answer_markdown import to_markdown
    from baton.public_errors import public_answer

    message = public_answer(message)  # no host, port, path or driver text reaches the client (the log keeps it)
    structured = structured_answer(message)
    content: list[Any] = [TextContent(type="text", text=to_markdown(message) or message.content or "(no answer)")]
    if chart_image and message.viz_config:
        try:
            content.append(ImageContent(type="image", data=await _png(message.viz_config), mime_type="image/png"))
        except Exception as exc:  # the answer stands without its picture
            structured["chart_image_error"] = f"{type(exc).__name__}: {exc}"[:500]
    return CallToolResult(content=content, structured_content=structured, is_error="error" in structured)


async def _png(spec: dict[str, Any]) -> str:
    from baton.viz import ChartRenderError, render_png

    if len(json.dumps(spec, default=str)) > MAX_CHART_SPEC_BYTES:
        raise ChartRenderError(f"chart spec over {MAX_CHART_SPEC_BYTES} bytes")
    return base64.b64encode(await asyncio.to_thread(render_png, spec)).decode()


def _register_tools(server: MCPServer, ws: Any) -> None:
    @server.tool(name="ask", annotations=READ_ONLY)
    async def ask(question: str, ctx: Context, session_id: str | None = None, chart_image: bool = True,
                  turn_id: str | None = None) -> CallToolResult:
        """Ask the workspace a question in plain language. Returns the answer's text and, as
        structured content, its rows, SQL, chart (Vega-Lite) and sources. Pass session_id from
        an earlier answer to ask a follow-up in the same conversation ("Show only the top 5").
        turn_id is the question's idempotency key: asked again with it, the stored answer
        comes back and nothing is stored twice (a failure names the key to retry with)."""
        from baton.state.turn_keys import BadTurnKey, checked_key, new_key

        try:
            key = checked_key(turn_id) or new_key()
        except BadTurnKey as exc:
            return refused("InvalidTurnId", str(exc))
        question = question.strip()
        if not question:
            return refused("InvalidQuestion", "the question is empty")
        if len(question) > MAX_QUESTION_CHARS:
            return refused("InvalidQuestion", f"the question is over {MAX_QUESTION_CHARS} characters")
        message = await _answer(ws, question, session_id or None, ctx, key)
        if isinstance(message, CallToolResult):
            return message
        return await answer_result(message, chart_image=chart_image)

    @server.tool(name="list_specialists", annotations=READ_ONLY)
    def list_specialists() -> CallToolResult:
        """The specialists this workspace's orchestrator routes questions to."""
        agents = [{"name": s.name, "tool": s.tool, "description": s.description, "kind": s.kind} for s in ws.catalog.specialists()]
        return _json_result({"workspace": ws.name, "orchestrator": ws.orchestrator.name, "specialists": agents})

    @server.tool(name="check_sql", annotations=READ_ONLY)
    async def check_sql(sql: str, dialect: str | None = None, connection: str | None = None) -> CallToolResult:
        """Would Baton let this SQL run? The safety verdict (safe, rule, reason) for one
        statement, checked like model-written SQL against this workspace's database. Runs nothing."""
        return await _check_sql(ws, sql, dialect, connection)

    @server.tool(name="search_memory", annotations=READ_ONLY)
    async def search_memory(query: str, limit: int = 10, kind: str | None = None) -> CallToolResult:
        """Search what this workspace remembers (doctrine, verified queries, learnings, notes,
        insights) for records sharing words with the query, best first."""
        return await _search_memory(ws, query, limit, kind)

    @server.tool(name="list_verified_questions", annotations=READ_ONLY)
    def list_verified_questions() -> CallToolResult:
        """Questions a person checked, with the SQL that answers them: asked as written they
        are answered without a language model."""
        return _json_result({"verified_questions": _verified(ws)})


async def _answer(ws: Any, question: str, session_id: str | None, ctx: Context, key: str) -> AIMessage | CallToolResult:
    from baton.errors import BatonError
    from baton.state import SessionNotFound
    from baton.state.turn_keys import TurnUnconfirmed

    step = 0
    message: AIMessage | None = None
    try:
        async for item in ws.answer_stream(question, session_id, turn_key=key):
            if isinstance(item, AIMessage):
                message = item
            elif isinstance(item, Event) and item.type not in QUIET_EVENTS:
                step += 1
                try:
                    await ctx.report_progress(step, None, describe(item))
                except Exception:  # a client that stopped listening must not fail the answer
                    log.debug("progress notification not sent", exc_info=True)
    except SessionNotFound:
        return refused("SessionNotFound", "no such session in this workspace")
    except TurnUnconfirmed as exc:
        return refused("StateUnavailable", f"the conversation store is unavailable; ask again with turn_id {exc.key}",
                       turn_id=exc.key, may_be_stored=exc.may_be_stored)
    except BatonError as exc:
        return refused(type(exc).__name__, str(exc))
    except Exception as exc:  # a failed question is a failed answer, typed
        log.exception("answering over MCP failed")
        return refused(type(exc).__name__, str(exc) or "the question failed")
    if message is None:
        return refused("AnswerError", "the workspace gave no answer")
    return message


async def _check_sql(ws: Any, sql: str, dialect: str | None, connection: str | None) -> CallToolResult:
    from baton.specialists.sql.engines import UnsupportedDialectError, normalize_dialect
    from baton.specialists.sql.safety import check_safety

    if not sql.strip():
        return refused("InvalidSQL", "no SQL given")
    if len(sql) > MAX_SQL_CHARS:
        return refused("InvalidSQL", f"the SQL is over {MAX_SQL_CHARS} characters")
    connections = sql_connections(ws)
    chosen = None
    if connection is not None:
        chosen = next((c for c in connections if c.id == connection), None)
        if chosen is None:
            return refused("UnknownConnection", f"no SQL connection {connection!r} in this workspace "
                                                f"(has: {', '.join(c.id for c in connections) or 'none'})")
    elif connections:
        chosen = connections[0]
    policy = None
    if chosen is not None:
        dialect, policy = chosen.dialect, chosen.relation_policy
    elif not dialect:
        return refused("InvalidDialect", "this workspace has no SQL connection: give a dialect (sqlite, duckdb, postgres, mysql)")
    try:
        dialect = normalize_dialect(dialect)
    except UnsupportedDialectError as exc:
        return refused("InvalidDialect", str(exc))
    verdict = await asyncio.to_thread(check_safety, sql, dialect, relations=policy)
    schemas = sorted(policy.schemas) if policy is not None and getattr(policy, "schemas", None) is not None else None
    result = {"safe": verdict.safe, "rule": verdict.rule, "reason": verdict.reason, "dialect": dialect,
              "connection": chosen.id if chosen is not None else None, "allowed_schemas": schemas}
    verdict_text = f"{'SAFE' if verdict.safe else 'BLOCKED ' + verdict.rule} ({dialect}): {verdict.reason}"
    return _json_result(result, text=verdict_text)


_WORD = re.compile(r"[a-z0-9_]+")


async def _search_memory(ws: Any, query: str, limit: int, kind: str | None) -> CallToolResult:
    if ws.memory is None:
        return refused("MemoryNotConfigured", "this workspace has no memory configured")
    if not query.strip():
        return refused("InvalidQuery", "the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        return refused("InvalidQuery", f"the query is over {MAX_QUERY_CHARS} characters")
    limit = max(1, min(int(limit), 100))
    words = {w for w in _WORD.findall(query.lower()) if len(w) > 2}

    def search() -> list[dict[str, Any]]:
        from baton.memory.bundle import relevance

        store, scope = ws.memory, ws.memory_scope()
        records = store.list_records(scope, kind=kind or None, limit=MEMORY_CANDIDATES)
        scored = [(relevance(words, r), r) for r in records]
        scored = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0] * (0.5 + s[1].confidence), s[1].id))
        return [{"id": r.id, "kind": r.kind, "text": r.text, "entity": r.entity, "attribute": r.attribute,
                 "value": r.value, "category": r.category, "confidence": round(r.confidence, 4), "verified": r.verified,
                 "score": round(score, 4)} for score, r in scored[:limit]]

    from baton.memory import MemoryUnavailableError

    try:
        found = await asyncio.to_thread(search)
    except MemoryUnavailableError:
        return refused("MemoryUnavailableError", "the workspace's memory is unavailable; try again")
    return _json_result({"query": query, "records": found})


def _verified(ws: Any) -> list[dict[str, Any]]:
    return [{"question": v.question, "agent": v.agent, "sql": v.sql, "connection_id": v.connection_id}
            for v in getattr(ws.orchestrator, "verified", ())]


def _register_resources(server: MCPServer, ws: Any) -> None:
    @server.resource(SCHEMA_URI, name="schema", mime_type="application/json",
                     description="The tables and columns of this workspace's databases.")
    async def schema() -> str:
        connections = []
        for connection in sql_connections(ws):
            info = await connection.schema()
            tables = [{**t.to_dict(), "row_estimate": t.row_estimate} for t in info.tables.values()]
            connections.append({"id": connection.id, "dialect": connection.dialect, "tables": tables})
        return json.dumps({"workspace": ws.name, "connections": connections}, ensure_ascii=False)

    @server.resource(VERIFIED_URI, name="verified-questions", mime_type="application/json",
                     description="Questions a person checked, with their SQL (answered without a model).")
    def verified_questions() -> str:
        return json.dumps({"workspace": ws.name, "verified_questions": _verified(ws)}, ensure_ascii=False)
