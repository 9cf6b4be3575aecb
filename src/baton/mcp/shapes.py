"""A rich answer as MCP structured content: plain JSON any client can read.

``AIMessage.to_dict`` tags dates, decimals and DataFrames so Baton can read them back
exactly; an MCP client is not Baton, so here every value is plain JSON instead:

- rows are ``[{column: value}]`` (from the query result, else the answer's data); a merged
  answer (several specialists) has ``datasets: {name: rows}`` instead, and data that is no
  table (an MCP specialist's structured result, say) is ``data``, as it is;
- dates and times are ISO strings, decimals are numbers (strings when not finite as
  floats), bytes are base64 strings, NaN/infinity are null;
- ``chart`` is the Vega-Lite spec (the chart's data inlined), ``sql`` the query, ``sources``
  the cited passages (source, chunk id, score, text);
- ``staleness_warning`` says when the answer leaned on data older than the workspace's
  freshness limit or on a stale learning; ``partial`` when some specialists failed;
- a failed answer has ``error: {type, message}``; the tool result is then ``isError``.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any

from baton.response import AIMessage, ResponseType


def plain(value: Any) -> Any:
    """``value`` as plain JSON (module docstring)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        number = float(value)
        return number if math.isfinite(number) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, uuid.UUID):
        return str(value)
    if hasattr(value, "dtypes") and hasattr(value, "itertuples"):  # a pandas DataFrame
        columns = [str(c) for c in value.columns]
        return [dict(zip(columns, map(plain, row))) for row in value.itertuples(index=False, name=None)]
    if hasattr(value, "item") and hasattr(value, "dtype"):  # numpy / pandas scalars
        return plain(value.item())
    return str(value)


def rows_of(message: AIMessage) -> tuple[list[str] | None, list[dict[str, Any]] | None, dict[str, Any] | None]:
    """(columns, rows, datasets): one dataset as rows, or a merged answer's datasets; all
    None for data that is no table (``structured_answer`` keeps it as ``data``)."""
    if message.results is not None:
        columns = [str(c) for c in message.results.columns]
        return columns, [dict(zip(columns, map(plain, row))) for row in message.results.rows], None
    data = message.data
    if data is None:
        return None, None, None
    if hasattr(data, "dtypes") and hasattr(data, "itertuples"):
        return [str(c) for c in data.columns], plain(data), None
    if isinstance(data, list):
        rows = [plain(r) if isinstance(r, dict) else {"value": plain(r)} for r in data]
        columns = list(dict.fromkeys(k for r in rows for k in r)) if rows else []
        return columns, rows, None
    if isinstance(data, dict) and message.meta.get("mode") == "synthesis":
        return None, None, {str(k): plain(v) for k, v in data.items()}
    return None, None, None


def error_type_of(message: AIMessage) -> str:
    meta = message.metadata
    if meta.get("error_type"):
        return str(meta["error_type"])
    for failure in meta.get("agent_errors") or ():
        if failure.get("error_type"):
            return str(failure["error_type"])
    return "AnswerError"


def structured_answer(message: AIMessage) -> dict[str, Any]:
    """The answer as MCP structured content (module docstring)."""
    columns, rows, datasets = rows_of(message)
    meta = message.metadata
    content: dict[str, Any] = {
        "text": message.content,
        "response_type": str(message.response_type),
        "session_id": message.session_id,
        "turn_id": message.turn_id,
        "sql": message.query,
        "columns": columns,
        "rows": rows,
        "row_count": len(rows) if rows is not None else None,
        "truncated": bool(message.results.truncated) if message.results is not None else False,
        "chart": plain(message.viz_config) if message.viz_config else None,
        "chart_type": message.viz_type if message.viz_config else None,
        "sources": [{"source": s.source, "chunk_id": s.chunk_id, "score": plain(s.score), "text": s.content}
                    for s in message.source_documents],
        "suggested_followups": list(message.suggested_followups),
        "routed_to": meta.get("routed_to") or meta.get("agents_consulted") or meta.get("agent"),
        "mode": meta.get("followup") or meta.get("mode"),
        "fast_path": meta.get("fast_path"),
        "llm_calls": meta.get("llm_calls"),
        "staleness_warning": message.staleness_warning,  # stale data or a stale learning behind the answer
        "partial": message.partial,
    }
    if datasets is not None:
        content["datasets"] = datasets
    elif rows is None and message.data is not None:
        content["data"] = plain(message.data)
    if message.error or message.response_type == ResponseType.ERROR:
        content["error"] = {"type": error_type_of(message), "message": message.error or message.content}
        code = getattr(message, "error_code", None) or message.meta.get("error_code")
        if code:
            content["error"]["code"] = str(code)
    return content
