"""What a failure says to the people using the server: a typed code and a plain sentence,
never the database's host and port, a file path, a URL or a driver's message.

Errors inside Baton carry the driver's text (``connection to server at "10.0.0.5", port 5432
failed: Connection refused``): that is what an operator needs, and the logs keep it. A user
of the HTTP API, the page or a chat client needs to know what failed and whether to try
again: ``error_code`` says it. So every answer, event and error body leaves the server
through here:

- a failure on a dependency (the database, the model provider, Baton's stores, the
  deadline: ``baton.agents.failures.DEPENDENCY_CODES``) or an unexpected one
  (``agent_failed``) reads as its code's sentence (``The database could not be reached.``);
- any other failure text (an unsafe statement refused, a column that does not exist) is
  kept, with what looks like a URL, a host and port, an address or an absolute path
  replaced by ``[hidden]``, and driver names removed.

The original answer is never changed (the stored turn keeps it, for the logs and the CLI).

``error_body`` is the shape of Baton's error bodies (``{"detail", "error_code"?, ...}``), for
the HTTP server (``baton.server.errors``) and MCP's HTTP endpoint (``baton.mcp.http``) alike.
Both surfaces leave through here, so neither imports the other for it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from baton.agents.failures import DEPENDENCY_CODES, explanation
from baton.response import AIMessage
from baton.workspace.answer import STORED_JSON

log = logging.getLogger("baton.server")
HIDDEN = "[hidden]"
MAX_TEXT = 500
_TEXT_KEYS = frozenset({"error", "reason", "detail", "message"})
# Each pattern is a run of plain character classes (no nesting): linear in the text's length.
_SECRETS = [
    re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s\"'<>]+"),  # URLs (database URLs with passwords included)
    re.compile(r"(?i)\b(?:host|server|hostaddr|socket)(?: name| at)?[ =:]+\"?[^\s\",]+\"?"),  # host "x", server at "x"
    re.compile(r"(?i)\bport[ =:]+\d+"),
    re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"),  # IPv4 addresses, with a port
    re.compile(r"\[[0-9A-Fa-f:]{2,39}\](?::\d+)?"),  # IPv6 addresses in brackets (quoted ones follow "host")
    re.compile(r"(?:^|(?<=[\s\"'(=]))(?:[A-Za-z]:)?[/\\][^\s\"'():,;]*[/\\.][^\s\"'():,;]*"),  # absolute paths
    re.compile(r"(?i)\b(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:local|internal|lan|com|net|org|io|cloud))(?::\d+)?\b"),
]
_DRIVERS = re.compile(r"(?i)\(?\b(?:psycopg2?|pymysql|mysqldb|asyncpg|sqlalchemy|duckdb|sqlite3|pyodbc|redis)"
                      r"(?:\.[A-Za-z_]+)*\)?[.:]?|\b[A-Za-z]*(?:Operational|Interface|Database|Programming)Error\b:?")


def error_body(detail: Any, code: str | None = None, **extra: Any) -> dict[str, Any]:
    """Baton's error body: ``{"detail": <reason>, "error_code": <code>, **extra}``; without a
    code, FastAPI's own ``{"detail": <reason>}`` (``extra``: a turn's key, a refused rule)."""
    if code is None:
        return {"detail": detail, **extra}
    return {"detail": detail, "error_code": code, **extra}


def redact(text: str) -> str:
    """``text`` with hosts, ports, addresses, URLs, paths and driver names hidden."""
    text = text[:MAX_TEXT]
    for pattern in _SECRETS:
        text = pattern.sub(HIDDEN, text)
    return " ".join(_DRIVERS.sub("", text).split())


def _generic(code: str | None) -> bool:
    return code is None or code in DEPENDENCY_CODES or code == "agent_failed"


def public_text(text: Any, code: str | None) -> Any:
    """One failure's text as a user reads it (module docstring)."""
    if not isinstance(text, str):
        return text
    if code is not None and _generic(code):
        return explanation(code)
    return redact(text)


def public_answer(message: AIMessage) -> AIMessage:
    """``message`` as it leaves the server: itself when nothing failed, else a copy whose
    failure texts are public (``public_text``)."""
    failures = message.metadata.get("agent_errors") if isinstance(message.metadata, dict) else None
    if not message.error and not failures:
        return message
    changes: dict[str, Any] = {}
    if failures:
        metadata = dict(message.metadata)
        metadata["agent_errors"] = [public_failure(entry) for entry in failures]
        changes["metadata"] = metadata
    if message.error:
        changes["error"] = _public_error(message, changes.get("metadata", {}).get("agent_errors") or [])
    if message.error != changes.get("error"):
        log.info("answer %s failed (%s): %s", message.turn_id, message.error_code, message.error)  # the full text, for operators
    public = message.shallow_copy(**changes)
    vars(public).pop(STORED_JSON, None)  # the stored turn's JSON is the original's
    return public


def public_failure(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    return {**entry, "error": public_text(entry.get("error"), entry.get("error_code") or "agent_failed")}


def _public_error(message: AIMessage, failures: list[Any]) -> str:
    code = message.error_code
    if code is not None and _generic(code) and failures:  # "sales: The database could not be reached."
        named = [f"{f.get('agent')}: {f.get('error')}" for f in failures if isinstance(f, dict) and f.get("agent")]
        if named:
            return "; ".join(named)
    return str(public_text(message.error, code))


def public_run(view: dict[str, Any]) -> dict[str, Any]:
    """A pipeline run's view (``GET /v1/pipelines/{id}``): its outcome, an answer as a dict,
    with its failure texts public; its own ``error`` hidden as any other text."""
    out = dict(view)
    outcome = out.get("outcome")
    if isinstance(outcome, dict) and (outcome.get("error") or (outcome.get("metadata") or {}).get("agent_errors")):
        metadata = dict(outcome.get("metadata") or {})
        failures = [public_failure(entry) for entry in metadata.get("agent_errors") or ()]
        if failures:
            metadata["agent_errors"] = failures
        out["outcome"] = {**outcome, "metadata": metadata}
        if outcome.get("error"):
            code = outcome.get("error_code")
            named = [f"{f.get('agent')}: {f.get('error')}" for f in failures if isinstance(f, dict) and f.get("agent")]
            out["outcome"]["error"] = "; ".join(named) if code and _generic(code) and named else public_text(outcome["error"], code)
    if isinstance(out.get("error"), str):
        out["error"] = redact(out["error"])
    return out


def public_event(data: dict[str, Any]) -> dict[str, Any]:
    """An event's dict (``Event.to_dict``) with its failure texts public: events carry a
    retry's reason or a stage's error, worded by whatever failed."""
    inner = data.get("data")
    if not isinstance(inner, dict) or not (_TEXT_KEYS & inner.keys()):
        return data
    code = inner.get("error_code")
    cleaned = {key: public_text(value, code) if key in _TEXT_KEYS else value for key, value in inner.items()}
    return {**data, "data": cleaned}
