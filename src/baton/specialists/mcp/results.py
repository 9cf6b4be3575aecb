"""An MCP tool result as Baton keeps it: ``MCPCallOutcome``.

A ``CallToolResult`` carries content blocks (text, images, audio, embedded resources,
resource links) and, optionally, structured content (a JSON object). Baton keeps them
apart, because they are different promises:

- structured content is DATA: kept exactly as the server sent it (it becomes the answer's
  ``data``), never re-shaped, but refused when it is not plain JSON or is over
  ``max_result_bytes`` (``MCPResultError``);
- text blocks are the TEXT (joined; at most ``max_text_chars`` kept, the cut said);
- images are kept as ``{"mime_type", "data" (base64), "tool"}``; embedded resources and
  resource links become artifacts (a text resource also joins the text);
- ``isError`` makes the whole call an ``MCPToolError`` carrying what the server said.

``text_for_model`` is what the specialist's own model reads: the text, else the structured
content as JSON, cut at ``MODEL_TEXT_CHARS``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass, field
from typing import Any

from baton.specialists.mcp.errors import MCPResultError, MCPToolError

MAX_RESULT_BYTES = 8_000_000
MAX_TEXT_CHARS = 200_000
MODEL_TEXT_CHARS = 8_000
MAX_JSON_DEPTH = 64


@dataclass
class MCPCallOutcome:
    """One successful tool call: what was asked and what came back."""

    server: str
    tool: str
    arguments: dict[str, Any]
    text: str = ""
    structured: dict[str, Any] | None = None
    images: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    duration_ms: float = 0.0

    def text_for_model(self) -> str:
        text = self.text.strip()
        if not text and self.structured is not None:
            text = json.dumps(self.structured, ensure_ascii=False, default=str)
        if not text:
            text = f"{self.tool} returned {len(self.images)} image(s)" if self.images else f"{self.tool} returned nothing"
        if len(text) > MODEL_TEXT_CHARS:
            text = text[:MODEL_TEXT_CHARS] + f"\n[... {len(text) - MODEL_TEXT_CHARS} more characters cut]"
        return text

    def summary(self) -> dict[str, Any]:
        """For ``metadata["mcp_calls"]``: the call without its (possibly large) payload."""
        return {"server": self.server, "tool": self.tool, "arguments": self.arguments,
                "structured": self.structured is not None, "images": len(self.images),
                "duration_ms": round(self.duration_ms, 3)}


def outcome_of(result: Any, *, server: str, tool: str, arguments: dict[str, Any],
               max_result_bytes: int = MAX_RESULT_BYTES, max_text_chars: int = MAX_TEXT_CHARS) -> MCPCallOutcome:
    """The outcome of ``result`` (an SDK ``CallToolResult``); ``MCPToolError`` when the
    server reported a failure, ``MCPResultError`` when the result is unusable."""
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        _check_plain_json(structured, server, tool, max_result_bytes)
    outcome = MCPCallOutcome(server=server, tool=tool, arguments=arguments, structured=structured)
    texts: list[str] = []
    size = 0
    for block in getattr(result, "content", None) or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(str(block.text))
        elif kind == "image":
            size += len(block.data)
            outcome.images.append({"mime_type": block.mime_type, "data": _base64(block.data, server, tool), "tool": tool})
        elif kind == "audio":
            size += len(block.data)
            outcome.artifacts.append({"type": "audio", "mime_type": block.mime_type, "data": _base64(block.data, server, tool), "tool": tool})
        elif kind == "resource":
            resource = block.resource
            entry = {"type": "resource", "uri": str(resource.uri), "mime_type": resource.mime_type, "tool": tool}
            if getattr(resource, "text", None) is not None:
                texts.append(str(resource.text))
                entry["text"] = str(resource.text)
            else:
                size += len(resource.blob)
                entry["data"] = _base64(resource.blob, server, tool)
            outcome.artifacts.append(entry)
        elif kind == "resource_link":
            outcome.artifacts.append({"type": "resource_link", "uri": str(block.uri), "name": getattr(block, "name", None),
                                      "mime_type": getattr(block, "mime_type", None), "tool": tool})
        else:
            raise MCPResultError(f"{tool!r} on {server!r} returned a content block of unknown type {kind!r}", server=server, tool=tool)
        if size > max_result_bytes:
            raise MCPResultError(f"{tool!r} on {server!r} returned over {max_result_bytes} bytes of content", server=server, tool=tool)
    text = "\n".join(texts)
    if len(text) > max_text_chars:
        text = text[:max_text_chars] + f"\n[... {len(text) - max_text_chars} more characters cut]"
    outcome.text = text
    if getattr(result, "is_error", False):
        said = text.strip() or (json.dumps(structured, default=str)[:500] if structured is not None else "no detail")
        raise MCPToolError(f"{tool!r} on {server!r} failed: {said[:2000]}", server=server, tool=tool, text=text, structured=structured)
    return outcome


def _check_plain_json(value: Any, server: str, tool: str, max_bytes: int) -> None:
    """Structured content must be a JSON object of plain JSON values (no NaN), not too big
    or too deep: it is handed on as data, to pages, notebooks and other programs."""
    if not isinstance(value, dict):
        raise MCPResultError(f"{tool!r} on {server!r} returned structured content that is not a JSON object "
                             f"({type(value).__name__})", server=server, tool=tool)
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise MCPResultError(f"{tool!r} on {server!r} returned structured content nested over {MAX_JSON_DEPTH} levels",
                                 server=server, tool=tool)
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str):
                    raise MCPResultError(f"{tool!r} on {server!r} returned a non-string key in structured content",
                                         server=server, tool=tool)
                stack.append((inner, depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise MCPResultError(f"{tool!r} on {server!r} returned a non-finite number in structured content",
                                 server=server, tool=tool)
        elif item is not None and not isinstance(item, (str, int, float, bool)):
            raise MCPResultError(f"{tool!r} on {server!r} returned a {type(item).__name__} in structured content",
                                 server=server, tool=tool)
    size = len(json.dumps(value, ensure_ascii=False))
    if size > max_bytes:
        raise MCPResultError(f"{tool!r} on {server!r} returned {size} bytes of structured content (limit {max_bytes})",
                             server=server, tool=tool)


def _base64(data: str, server: str, tool: str) -> str:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise MCPResultError(f"{tool!r} on {server!r} returned binary content that is not base64", server=server, tool=tool) from None
    return data
