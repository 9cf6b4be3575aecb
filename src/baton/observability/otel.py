"""``OTelTracker``: the tracker's events as OpenTelemetry spans, GenAI semantic conventions.

One workflow (one ``workflow_id``) becomes one tree::

    invoke_workflow {agent}                      root: the request
    ├── chat {model}                             llm.start/llm.end, keyed by iteration
    ├── execute_tool {tool}                      tool.start/tool.end, keyed by call_id
    │   └── invoke_agent {agent}                 agent.start/agent.end (same call_id as its tool)
    │       ├── sql.attempt                      one per sql.attempt (duration_ms before the event)
    │       └── chat {model}                     the specialist's own loop
    ├── stage {stage_id}                         stage.start/stage.end, stage.failed, stage.skipped
    └── chat {model}

Attributes: ``gen_ai.operation.name`` (``chat``, ``execute_tool``, ``invoke_agent``,
``invoke_workflow``), ``gen_ai.provider.name`` and the older ``gen_ai.system``,
``gen_ai.request.model``/``gen_ai.response.model`` (the model that answered: the events
carry no other), ``gen_ai.usage.*_tokens`` (per call, summed on the root),
``gen_ai.response.finish_reasons``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.agent.name``, ``gen_ai.conversation.id``; SQL attempts: ``db.query.text``,
``db.response.returned_rows``; failures: ``error.type`` and an ERROR status; the rest under
``baton.``. Other events (``loop.*``, ``agent.retry``, ``stage.checkpoint``, ``pipeline.*``,
...) become span events on the span they happened in.

Decisions:

- Span times are the events' own timestamps, so a span lasts as long as the work did.
- LLM spans are keyed by (workflow, enclosing scope, iteration): a specialist's loop
  iteration 1 never closes the orchestrator's iteration 1 (see ``spans`` for scopes).
- The root ends on a ``workflow.end`` event (``workflow.start``/``workflow.end`` may carry
  ``agent``, ``session_id``, ``question``, ``status``), on ``end_workflow()``, or once the
  workflow has had no open span and no event for ``idle_timeout_s`` (a daemon thread started
  on first use checks every second; ``sweep()`` does it on demand). A workflow left with
  open spans (a cancelled request) is closed after ``stale_timeout_s``, its open spans
  marked ``baton.unfinished``. Events after the root closed (a pipeline resumed after a
  checkpoint) start a new root linked to the last one (``baton.workflow.resumed``).
- Content (questions, tool arguments, SQL text) is exported only with capture on
  (``values.capture_content_from_env``): it may hold users' data.
- ``emit`` never raises (a failure is logged once per event type) and does no I/O: export
  is the provider's span processor's job (``configure_observability`` uses the batch one).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Any

from baton.events import Event
from baton.observability.spans import OpenSpan, SpanBook, Workflow
from baton.observability.values import attribute, capture_content_from_env, nanoseconds, without_content

log = logging.getLogger("baton.observability")
IDLE_TIMEOUT_S = 60.0
STALE_TIMEOUT_S = 900.0


class OTelTracker:
    """A ``WorkflowTracker`` exporting spans through ``tracer_provider`` (the global provider
    when None: a no-op until the application installs an SDK one).

    ``sweep_interval_s=None`` starts no thread; call ``sweep()`` yourself then.
    ``owns_provider``: ``shutdown()`` also shuts the provider down.
    """

    def __init__(self, tracer_provider: Any = None, *, capture_content: bool | None = None,
                 idle_timeout_s: float = IDLE_TIMEOUT_S, stale_timeout_s: float = STALE_TIMEOUT_S,
                 sweep_interval_s: float | None = 1.0, owns_provider: bool = False) -> None:
        from opentelemetry import trace

        self._trace = trace
        self.provider = tracer_provider or trace.get_tracer_provider()
        self.capture_content = capture_content_from_env() if capture_content is None else capture_content
        self.idle_timeout_s, self.stale_timeout_s = idle_timeout_s, stale_timeout_s
        self._book = SpanBook(self.provider.get_tracer("baton", "0.1.0"), trace)
        self._sweep_interval = sweep_interval_s
        self._owns_provider = owns_provider
        self._lock = threading.RLock()
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()
        self._failed_types: set[str] = set()
        self._sql_ids = itertools.count(1)
        self._handlers = {
            "workflow.start": self._workflow_start, "workflow.end": self._workflow_end,
            "llm.start": self._llm_start, "llm.end": self._llm_end, "llm.error": self._llm_error, "llm.token": self._llm_token,
            "tool.start": self._tool_start, "tool.end": self._tool_end,
            "agent.start": self._agent_start, "agent.end": self._agent_end, "agent.retry": self._agent_retry,
            "sql.attempt": self._sql_attempt,
            "stage.start": self._stage_start, "stage.end": self._stage_end, "stage.failed": self._stage_failed,
            "stage.skipped": self._stage_skipped,
        }

    def emit(self, event: Event) -> None:
        try:
            if self._sweeper is None and self._sweep_interval:
                self._start_sweeper()
            with self._lock:
                workflow = self._book.workflow(event)
                workflow.last_ts = max(workflow.last_ts, event.ts)
                self._handlers.get(event.type, self._point)(workflow, event)
        except Exception:  # never fail the request; say so once per event type
            if event.type not in self._failed_types:
                self._failed_types.add(event.type)
                log.warning("could not export the %s event as a span", event.type, exc_info=True)

    # --- lifecycle ----------------------------------------------------------------------

    def end_workflow(self, workflow_id: str, *, status: str | None = None) -> bool:
        """End the workflow's root span (and any span left open); False if none is open."""
        with self._lock:
            workflow = self._book.workflows.get(workflow_id)
            if workflow is not None:
                self._book.close(workflow, status=status)
            return workflow is not None

    def sweep(self, now: float | None = None) -> int:
        """End the workflows idle or stale at ``now`` (default: the current time); how many."""
        with self._lock:
            expired = self._book.expired(time.time() if now is None else now, self.idle_timeout_s, self.stale_timeout_s)
            for workflow in expired:
                self._book.close(workflow)
        return len(expired)

    def open_workflows(self) -> list[str]:
        with self._lock:
            return list(self._book.workflows)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        flush = getattr(self.provider, "force_flush", None)
        return bool(flush(timeout_millis)) if callable(flush) else True

    def shutdown(self) -> None:
        """End every open span, stop the sweeper, flush (and shut down an owned provider)."""
        self._stop.set()
        with self._lock:
            for workflow in list(self._book.workflows.values()):
                self._book.close(workflow)
        self.force_flush()
        if self._owns_provider and hasattr(self.provider, "shutdown"):
            self.provider.shutdown()

    def _start_sweeper(self) -> None:
        with self._lock:
            if self._sweeper is None:
                self._sweeper = threading.Thread(target=self._sweep_loop, name="baton-otel-sweeper", daemon=True)
                self._sweeper.start()

    def _sweep_loop(self) -> None:
        while not self._stop.wait(self._sweep_interval):
            try:
                self.sweep()
            except Exception:
                log.warning("closing idle workflow spans failed", exc_info=True)

    # --- one handler per event type (called under the lock) ----------------------------

    def _workflow_start(self, workflow: Workflow, event: Event) -> None:
        d, root = event.data, workflow.root.span
        if d.get("agent"):
            root.update_name(f"invoke_workflow {d['agent']}")
            root.set_attribute("gen_ai.agent.name", str(d["agent"]))
        if d.get("session_id"):
            root.set_attribute("gen_ai.conversation.id", str(d["session_id"]))
        if self.capture_content and d.get("question"):
            root.set_attribute("baton.question", attribute(d["question"]))

    def _workflow_end(self, workflow: Workflow, event: Event) -> None:
        self._book.close(workflow, status=event.data.get("status"))

    def _llm_key(self, workflow: Workflow, event: Event) -> tuple:
        scope = self._book.live_scope(workflow)
        return ("llm", id(scope) if scope else 0, event.data.get("iteration"))

    def _llm_span(self, workflow: Workflow, event: Event) -> OpenSpan | None:
        opened = workflow.open.get(self._llm_key(workflow, event))
        if opened is None:  # emitted from another task than its llm.start: the latest match
            iteration = event.data.get("iteration")
            opened = self._book.find(workflow, "llm", lambda o: o.key[2] == iteration)
        return opened

    def _llm_start(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        self._book.open(workflow, self._llm_key(workflow, event), "llm", "chat", event.ts, {
            "gen_ai.operation.name": "chat", "baton.iteration": d.get("iteration"),
            "baton.llm.prompt_tokens_estimate": d.get("prompt_tokens"), "baton.llm.messages": d.get("messages"),
            "baton.llm.tools": d.get("tools"), "baton.llm.stream": d.get("stream"),
        }, span_kind=self._trace.SpanKind.CLIENT)

    def _llm_token(self, workflow: Workflow, event: Event) -> None:
        opened = self._llm_span(workflow, event)
        if opened is not None:
            if opened.chunks == 0:
                opened.span.set_attribute("baton.llm.time_to_first_token_ms", round((event.ts - opened.start_ts) * 1000, 3))
            opened.chunks += 1

    def _llm_end(self, workflow: Workflow, event: Event) -> None:
        opened = self._llm_span(workflow, event)
        if opened is None:
            return
        d, span = event.data, opened.span
        if d.get("model"):
            span.update_name(f"chat {d['model']}")
            span.set_attribute("gen_ai.request.model", str(d["model"]))
            span.set_attribute("gen_ai.response.model", str(d["model"]))
        if d.get("provider"):
            span.set_attribute("gen_ai.provider.name", str(d["provider"]))
            span.set_attribute("gen_ai.system", str(d["provider"]))
        for key, value in (d.get("usage") or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                span.set_attribute(f"gen_ai.usage.{key}", value)
                workflow.usage[key] = workflow.usage.get(key, 0) + value
        if d.get("finish_reason"):
            span.set_attribute("gen_ai.response.finish_reasons", [str(d["finish_reason"])])
        if isinstance(d.get("tool_calls"), int):
            span.set_attribute("baton.llm.tool_calls", d["tool_calls"])
        if opened.chunks:
            span.set_attribute("baton.llm.stream_chunks", opened.chunks)
        self._book.end(opened, event.ts)

    def _llm_error(self, workflow: Workflow, event: Event) -> None:
        opened = self._llm_span(workflow, event)
        if opened is not None:
            d = event.data
            opened.span.set_attribute("baton.llm.retryable", bool(d.get("retryable")))
            self._book.end(opened, event.ts, error_type=d.get("error_type") or "llm_error", description=str(d.get("message") or "")[:500])

    def _tool_start(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": d.get("name"), "gen_ai.tool.call.id": d.get("call_id"),
                      "gen_ai.tool.type": "function", "baton.iteration": d.get("iteration")}
        if self.capture_content and d.get("arguments") is not None:
            attributes["gen_ai.tool.call.arguments"] = d["arguments"]
        self._book.open(workflow, ("tool", d.get("call_id")), "tool", f"execute_tool {d.get('name')}", event.ts, attributes, scope=True)

    def _tool_end(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        opened = workflow.open.get(("tool", d.get("call_id")))
        if opened is not None:
            self._book.end(opened, event.ts, error_type=(d.get("error_type") or "tool_error") if d.get("is_error") else None)

    def _agent_start(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        call_id, name = d.get("call_id"), str(d.get("agent"))
        tool = workflow.open.get(("tool", call_id)) if call_id else None  # its tool span, whichever task emits
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "gen_ai.tool.call.id": call_id}
        if self.capture_content and d.get("question"):
            attributes["baton.question"] = d["question"]
        self._book.open(workflow, ("agent", call_id or name), "agent", f"invoke_agent {name}", event.ts, attributes,
                        parent=tool, scope=True, label=name)

    def _agent_end(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        opened = workflow.open.get(("agent", d.get("call_id") or str(d.get("agent"))))
        if opened is not None:
            opened.span.set_attribute("baton.agent.status", str(d.get("status")))
            failed = d.get("status") == "error"
            self._book.end(opened, event.ts, error_type=(d.get("error_type") or "agent_error") if failed else None)

    def _agent_retry(self, workflow: Workflow, event: Event) -> None:
        name = str(event.data.get("agent"))
        self._add_event(self._book.find(workflow, "agent", lambda o: o.label == name) or workflow.root, event)

    def _sql_attempt(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        duration_ms = d.get("duration_ms")
        started = event.ts - (float(duration_ms) / 1000.0 if isinstance(duration_ms, (int, float)) else 0.0)
        attributes = {"baton.sql.attempt": d.get("attempt"), "baton.sql.outcome": d.get("outcome"),
                      "db.response.returned_rows": d.get("row_count"), "baton.sql.connection_id": d.get("connection_id")}
        if self.capture_content and d.get("sql"):
            attributes["db.query.text"] = d["sql"]
        opened = self._book.open(workflow, ("sql", next(self._sql_ids)), "sql", "sql.attempt", started, attributes)
        failed = d.get("outcome") not in (None, "success")
        self._book.end(opened, event.ts, error_type=(d.get("error_class") or d.get("outcome")) if failed else None)

    def _stage_start(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        attributes = {"baton.stage.id": d.get("stage_id"), "baton.stage.tool": d.get("tool")}
        if self.capture_content and d.get("question"):
            attributes["baton.question"] = d["question"]
        self._book.open(workflow, ("stage", d.get("stage_id")), "stage", f"stage {d.get('stage_id')}", event.ts, attributes, scope=True)

    def _stage_end(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        opened = workflow.open.get(("stage", d.get("stage_id")))
        if opened is None:
            return
        opened.span.set_attribute("baton.stage.status", str(d.get("status")))
        if d.get("rows") is not None:
            opened.span.set_attribute("baton.stage.rows", attribute(d["rows"]))
        workflow.ended_stages.add(str(d.get("stage_id")))
        self._book.end(opened, event.ts, error_type="stage_error" if d.get("status") == "error" else None)

    def _stage_failed(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        stage_id = d.get("stage_id")
        opened = workflow.open.get(("stage", stage_id))
        if opened is None and str(stage_id) in workflow.ended_stages:
            return  # its stage.end already marked it
        if opened is None:  # never started: blocked by a failed dependency
            opened = self._book.open(workflow, ("stage", stage_id), "stage", f"stage {stage_id}", event.ts, {"baton.stage.id": stage_id})
        opened.span.set_attribute("baton.stage.status", "error")
        self._book.end(opened, event.ts, error_type=d.get("error_type") or "stage_failed", description=str(d.get("reason") or "")[:500])

    def _stage_skipped(self, workflow: Workflow, event: Event) -> None:
        d = event.data
        opened = self._book.open(workflow, ("stage", d.get("stage_id")), "stage", f"stage {d.get('stage_id')}", event.ts,
                                 {"baton.stage.id": d.get("stage_id"), "baton.stage.status": "skipped", "baton.stage.reason": d.get("reason")})
        self._book.end(opened, event.ts)

    def _point(self, workflow: Workflow, event: Event) -> None:
        self._add_event(self._book.live_scope(workflow) or workflow.root, event)

    def _add_event(self, opened: OpenSpan, event: Event) -> None:
        data = without_content(event.data, self.capture_content)
        opened.span.add_event(event.type, attributes={k: attribute(v) for k, v in data.items() if v is not None},
                              timestamp=nanoseconds(event.ts))
