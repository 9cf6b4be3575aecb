"""What of a provider's error may reach an answer, a session or a log: status, provider,
model and a short message; never headers, HTML pages, keys or prompts.

Providers' error bodies are not ours to trust: a proxy's 500 page may quote the request
(the system prompt), a gateway's 401 may echo the ``Authorization`` header. So the message
kept from an error body is cut to ``MAX_CHARS`` after:

- an HTML page (or any markup-heavy text) is replaced by "an HTML page";
- the caller's own secrets (the configured API key) are redacted wherever they appear;
- anything shaped like a credential is redacted: ``Bearer ...``, ``Authorization:`` /
  ``X-Api-Key:`` / ``api-key`` headers, ``sk-...`` / ``sk-ant-...`` keys, ``key=``/``token=``
  parameters, long base64 or hex runs;
- a quoted passage of more than ``MAX_QUOTE`` characters (an echoed prompt or message) is
  replaced by "[quoted text]".

The SDK's exception (whose text holds the whole body) is never chained to the error Baton
raises, so no traceback prints it either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_CHARS = 200
MAX_QUOTE = 40
_HTML = re.compile(r"<\s*(!doctype|html|head|body|title|div|p|pre|h1|script|style)\b", re.IGNORECASE)
_CREDENTIALS = [
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"(?i)\b(authorization|x-api-key|api-key|x-goog-api-key|proxy-authorization)\b\s*[:=]\s*['\"]?[^\s,'\"}]+(\s+[^\s,'\"}]+)?"),
    re.compile(r"\bsk-(ant-)?[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)\b(api[_-]?key|access[_-]?token|token|secret|password|key)\b(['\"]?\s*[:=]\s*['\"]?)[^\s&,'\"}]{6,}"),
    re.compile(r"\b[A-Za-z0-9+/_-]{32,}={0,2}"),
]
_QUOTED = re.compile(rf"(\"[^\"]{{{MAX_QUOTE},}}\"|'[^']{{{MAX_QUOTE},}}'|`[^`]{{{MAX_QUOTE},}}`)", re.DOTALL)


def looks_like_html(text: str) -> bool:
    return bool(_HTML.search(text[:2000])) or text[:2000].count("<") > 10


def provider_text(text: object, *, secrets: Iterable[str | None] = ()) -> str:
    """``text`` as it may be shown (module docstring)."""
    value = "" if text is None else str(text)
    if not value.strip():
        return ""
    if looks_like_html(value):
        return "an HTML page"
    for secret in secrets:
        if secret and len(secret) >= 6:
            value = value.replace(secret, "[redacted]")
    value = _QUOTED.sub("[quoted text]", value)
    for pattern in _CREDENTIALS:
        value = pattern.sub("[redacted]", value)
    value = " ".join(value.split())
    return value if len(value) <= MAX_CHARS else value[: MAX_CHARS - 1] + "…"
