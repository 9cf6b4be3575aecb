"""Observability: the tracker's events as OpenTelemetry spans, or as JSON log lines.

``configure_observability()`` reads the standard ``OTEL_*`` environment and returns a
``WorkflowTracker``: an :class:`OTelTracker` (``otel``: one span per workflow, LLM call, tool
call, agent, SQL attempt and pipeline stage, GenAI semantic conventions) when an exporter
is configured, else a :class:`LoggingTracker` (``logs``: one JSON line per event). Create
it once per process, pass it as ``tracker=`` to ``OrchestratorAgent.ask``/``ask_stream``
(or fan it out next to another tracker with ``baton.events.FanOutTracker``), and call its
``shutdown()`` when the process stops so the last spans are exported.

Content (questions, tool arguments, SQL text, streamed tokens) stays out of spans and logs
unless ``BATON_OTEL_CAPTURE_CONTENT=1`` or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from baton.events import WorkflowTracker
from baton.observability.logs import EVENT_LOGGER, LoggingTracker
from baton.observability.otel import OTelTracker
from baton.observability.values import capture_content as content_captured
from baton.observability.values import capture_content_from_env
from baton.settings import Settings

log = logging.getLogger("baton.observability")


def configure_observability(env: Mapping[str, str] | None = None, *, service_name: str = "baton",
                            capture_content: bool | None = None, settings: Settings | None = None) -> WorkflowTracker:
    """The tracker the settings ask for (``settings``, else ``Settings.from_env(env)``).

    - ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``: logs.
    - ``BATON_OTEL_CONSOLE=1`` or ``OTEL_TRACES_EXPORTER=console``: spans printed to stdout.
    - ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
      ``OTEL_TRACES_EXPORTER=otlp``): OTLP over ``OTEL_EXPORTER_OTLP_PROTOCOL``
      (``http/protobuf`` by default, or ``grpc``); the exporter reads its other
      ``OTEL_EXPORTER_OTLP_*`` settings itself. The HTTP exporter is a dependency of Baton;
      ``grpc`` needs ``opentelemetry-exporter-otlp-proto-grpc`` installed (without it this
      warns and falls back to logs).
    - No exporter, but the application already installed an SDK tracer provider globally
      (e.g. under ``opentelemetry-instrument``): spans go there.
    - Otherwise: JSON log lines.

    ``OTEL_SERVICE_NAME`` names the service (default ``service_name``). Spans leave through a
    batch span processor, never on the request's path.
    """
    settings = settings if settings is not None else Settings.from_env(env)
    capture = content_captured(settings) if capture_content is None else capture_content
    chosen = {name.strip().lower() for name in (settings.otel_traces_exporter or "").split(",") if name.strip()}
    if settings.otel_sdk_disabled or "none" in chosen:
        return LoggingTracker(capture_content=capture)

    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    exporters: list[Any] = []
    if settings.otel_console or "console" in chosen:
        exporters.append(ConsoleSpanExporter())
    if "otlp" in chosen or settings.otel_endpoint or settings.otel_traces_endpoint:
        otlp = _otlp_exporter(settings)
        if otlp is not None:
            exporters.append(otlp)
    if not exporters:
        if isinstance(trace.get_tracer_provider(), TracerProvider):
            return OTelTracker(capture_content=capture)
        return LoggingTracker(capture_content=capture)
    provider = TracerProvider(resource=Resource.create({"service.name": settings.otel_service_name or service_name}))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return OTelTracker(provider, capture_content=capture, owns_provider=True)


def _otlp_exporter(settings: Settings) -> Any:
    protocol = (settings.otel_traces_protocol or settings.otel_protocol or "http/protobuf").strip().lower()
    transport = "grpc" if protocol == "grpc" else "http"
    try:
        if transport == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        package = f"opentelemetry-exporter-otlp-proto-{transport}"
        log.warning("an OTLP endpoint is configured but %s is not installed (pip install %s): "
                    "events go to the logs instead", package, package)
        return None
    return OTLPSpanExporter()


__all__ = ["EVENT_LOGGER", "LoggingTracker", "OTelTracker", "capture_content_from_env", "configure_observability"]
