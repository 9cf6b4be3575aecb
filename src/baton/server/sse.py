"""Server-Sent Events framing."""

from __future__ import annotations

import json
from typing import Any


def sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, default=str)}\n\n"


def sse_data(data: Any) -> str:
    """An unnamed event (what OpenAI-style streaming clients read)."""
    return f"data: {data if isinstance(data, str) else json.dumps(data, default=str)}\n\n"
