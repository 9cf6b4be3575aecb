"""The open spans of every workflow in flight: which parent a new span gets, ending spans at
the events' own times, and closing a whole workflow.

Nesting follows the asyncio task that emits: opening a tool, agent or stage span sets a
context variable (the task's current *scope*), so concurrent specialists of one request
each build their own subtree, and a workflow started inside another's scope nests under it.
A scope that already ended is skipped (a cancelled task may leave its variable behind).

Not thread-safe by itself: ``OTelTracker`` calls it under its lock.
"""

from __future__ import annotations

import contextvars
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from baton.events import Event
from baton.observability.values import attribute, nanoseconds

MAX_OPEN_WORKFLOWS = 10_000
MAX_CLOSED_REMEMBERED = 1_000


class OpenSpan:
    """A span opened and not yet ended."""

    __slots__ = ("span", "workflow", "key", "kind", "label", "start_ts", "prev_scope", "closed", "chunks")

    def __init__(self, span: Any, workflow: Workflow | None, key: tuple, kind: str, start_ts: float,
                 prev_scope: OpenSpan | None = None, label: str = "") -> None:
        self.span, self.workflow, self.key, self.kind, self.label = span, workflow, key, kind, label
        self.start_ts, self.prev_scope = start_ts, prev_scope
        self.closed = False
        self.chunks = 0  # streamed chunks seen (LLM spans)


class Workflow:
    """One workflow id's root span, its open spans, and what the root reports at the end."""

    __slots__ = ("id", "root", "open", "last_ts", "usage", "ended_stages")

    def __init__(self, workflow_id: str, root: OpenSpan, ts: float) -> None:
        self.id, self.root, self.last_ts = workflow_id, root, ts
        self.open: dict[tuple, OpenSpan] = {}
        self.usage: dict[str, int] = {}  # summed over the workflow's LLM calls
        self.ended_stages: set[str] = set()


_SCOPE: contextvars.ContextVar[OpenSpan | None] = contextvars.ContextVar("baton_otel_scope", default=None)


class SpanBook:
    def __init__(self, tracer: Any, trace_api: Any) -> None:
        self.tracer = tracer
        self.trace = trace_api
        self.workflows: OrderedDict[str, Workflow] = OrderedDict()  # least recently active first
        self.closed: OrderedDict[str, Any] = OrderedDict()  # workflow id -> its last root's SpanContext

    def workflow(self, event: Event) -> Workflow:
        """The event's workflow, its root span started at the event when it is new."""
        workflow_id = event.workflow_id or "-"
        workflow = self.workflows.get(workflow_id)
        if workflow is not None:
            self.workflows.move_to_end(workflow_id)
            return workflow
        if len(self.workflows) >= MAX_OPEN_WORKFLOWS:
            self.close(next(iter(self.workflows.values())))
        links: list[Any] = []
        attributes: dict[str, str | bool] = {"gen_ai.operation.name": "invoke_workflow", "baton.workflow_id": workflow_id}
        previous = self.closed.pop(workflow_id, None)
        if previous is not None:  # e.g. a pipeline resumed after its checkpoint
            links.append(self.trace.Link(previous))
            attributes["baton.workflow.resumed"] = True
        outer = self.live_scope(None)
        context = self.trace.set_span_in_context(outer.span) if outer is not None else None
        span = self.tracer.start_span("invoke_workflow", context=context, attributes=attributes, links=links,
                                      start_time=nanoseconds(event.ts))
        root = OpenSpan(span, None, ("root",), "workflow", event.ts)
        workflow = Workflow(workflow_id, root, event.ts)
        root.workflow = workflow
        self.workflows[workflow_id] = workflow
        return workflow

    def live_scope(self, workflow: Workflow | None) -> OpenSpan | None:
        """This task's innermost open tool/agent/stage span (in ``workflow``, or in any)."""
        scope = _SCOPE.get()
        while scope is not None and (scope.closed or (workflow is not None and scope.workflow is not workflow)):
            scope = scope.prev_scope
        return scope

    def open(self, workflow: Workflow, key: tuple, kind: str, name: str, ts: float, attributes: dict[str, Any], *,
             parent: OpenSpan | None = None, scope: bool = False, span_kind: Any = None, label: str = "") -> OpenSpan:
        parent = parent or self.live_scope(workflow) or workflow.root
        stale = workflow.open.get(key)
        if stale is not None:  # the same key again before its end: end the old one, marked
            self.end(stale, ts, unfinished=True)
        span = self.tracer.start_span(
            name, context=self.trace.set_span_in_context(parent.span), kind=span_kind or self.trace.SpanKind.INTERNAL,
            attributes={k: attribute(v) for k, v in attributes.items() if v is not None}, start_time=nanoseconds(ts),
        )
        opened = OpenSpan(span, workflow, key, kind, ts, _SCOPE.get() if scope else None, label)
        workflow.open[key] = opened
        if scope:
            _SCOPE.set(opened)
        return opened

    def end(self, opened: OpenSpan, ts: float, *, error_type: str | None = None, unfinished: bool = False,
            description: str | None = None) -> None:
        if opened.closed:
            return
        opened.closed = True
        if opened.workflow is not None and opened.workflow.open.get(opened.key) is opened:
            del opened.workflow.open[opened.key]
        if _SCOPE.get() is opened:
            _SCOPE.set(opened.prev_scope)
        span = opened.span
        if unfinished:
            span.set_attribute("baton.unfinished", True)
        if error_type:
            span.set_attribute("error.type", str(error_type))
            span.set_status(self.trace.Status(self.trace.StatusCode.ERROR, description))
        span.end(end_time=nanoseconds(max(ts, opened.start_ts)))

    def close(self, workflow: Workflow, *, status: str | None = None) -> None:
        """End the workflow: spans left open (innermost first, marked unfinished), then the
        root, at the time of its last event, with the token totals."""
        for opened in sorted(workflow.open.values(), key=lambda o: -o.start_ts):
            self.end(opened, workflow.last_ts, unfinished=True)
        root = workflow.root.span
        for key, value in workflow.usage.items():
            root.set_attribute(f"gen_ai.usage.{key}", value)
        if status:
            root.set_attribute("baton.workflow.status", str(status))
        self.end(workflow.root, workflow.last_ts, error_type="workflow_error" if status == "error" else None)
        self.workflows.pop(workflow.id, None)
        self.closed[workflow.id] = root.get_span_context()
        while len(self.closed) > MAX_CLOSED_REMEMBERED:
            self.closed.popitem(last=False)

    def find(self, workflow: Workflow, kind: str, match: Callable[[OpenSpan], bool]) -> OpenSpan | None:
        """The most recently opened span of ``kind`` that matches."""
        found = [o for o in workflow.open.values() if o.kind == kind and match(o)]
        return max(found, key=lambda o: o.start_ts) if found else None

    def expired(self, now: float, idle_s: float, stale_s: float) -> list[Workflow]:
        """Workflows with no open span and no event for ``idle_s``, or none for ``stale_s``."""
        return [w for w in self.workflows.values()
                if (not w.open and now - w.last_ts >= idle_s) or now - w.last_ts >= stale_s]
