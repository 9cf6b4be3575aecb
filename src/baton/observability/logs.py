"""Structured logs: each event as one JSON line through ``logging`` (when no exporter is set)."""

from __future__ import annotations

import datetime as dt
import json
import logging

from baton.events import Event
from baton.observability.values import capture_content_from_env, without_content

EVENT_LOGGER = "baton.events"


class LoggingTracker:
    """A ``WorkflowTracker`` that logs each event to the ``baton.events`` logger.

    The JSON line is the log message, so a handler formatted as ``%(message)s`` writes JSON
    lines; the same dict is on the record as ``record.baton_event`` for structured handlers.
    Streamed tokens are logged at DEBUG only (there are hundreds per answer); everything else
    at ``level``. A disabled level costs one ``isEnabledFor`` check.
    """

    def __init__(self, logger: logging.Logger | None = None, *, level: int = logging.INFO, capture_content: bool | None = None) -> None:
        self.logger = logger or logging.getLogger(EVENT_LOGGER)
        self.level = level
        self.capture_content = capture_content_from_env() if capture_content is None else capture_content

    def emit(self, event: Event) -> None:
        try:
            level = logging.DEBUG if event.type == "llm.token" else self.level
            if not self.logger.isEnabledFor(level):
                return
            payload = {
                "ts": dt.datetime.fromtimestamp(event.ts, dt.UTC).isoformat(timespec="milliseconds"),
                "event": event.type, "workflow_id": event.workflow_id,
                "data": without_content(event.data, self.capture_content),
            }
            self.logger.log(level, json.dumps(payload, default=str), extra={"baton_event": payload})
        except Exception:  # a tracker never fails a request
            pass

    def shutdown(self) -> None:
        return None
