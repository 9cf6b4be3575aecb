"""The no-model document answer: the passages that answer best, as clean Markdown.

With no model to write an answer, the knowledge specialist quotes its documents. A reader
should see the passage under its own heading, not "[1] ## Profit Also called ..." run
together, and each source once:

- passages are re-ranked by how many of the question's words their own heading and text
  hold (the heading counts double), then by retrieval score: "What is a roadshow?" shows the
  "Roadshow" entry before "Cancelled roadshow events", which mentions roadshows more often
  (on a tie, the heading made most of the question's words wins);
- passages covering under three quarters of what the best one covers are left out; at
  most three;
- each passage is its heading in bold, the source file and citation, then its own Markdown
  body (headings dropped, paragraphs kept), cut at a sentence near ``PASSAGE_CHARS``;
- citations are per source file: two sections of ``metrics.md`` are both ``[1]``, and the
  answer carries one ``SourceDocument`` per file (its cited sections' text together).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from baton.phrasing import DEFAULT_VOCABULARY, Vocabulary
from baton.response import SourceDocument

HEADER = "No language model is configured, so here is what the documents say:"
MAX_PASSAGES = 3
PASSAGE_CHARS = 600
KEEP_SHARE = 0.75
_CUE_WORDS = frozenset("define mean meaning explain describe handle treat count calculate compute policy rule".split())


def _heading(chunk: Any) -> str:
    path = tuple(getattr(chunk, "heading_path", ()) or ())
    return path[-1] if path else ""


def _body(text: str) -> str:
    """The chunk's Markdown without its heading lines, blank runs collapsed, cut near a
    sentence end."""
    lines = [line.rstrip() for line in text.strip().splitlines() if not re.match(r"^\s{0,3}#{1,6}\s", line)]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if len(body) <= PASSAGE_CHARS:
        return body
    cut = body[:PASSAGE_CHARS]
    end = max(cut.rfind(". "), cut.rfind(".\n"))
    return (cut[:end + 1] if end > PASSAGE_CHARS // 2 else cut.rstrip()) + " …"


def rank(question: str, hits: Sequence[Any], vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> list[Any]:
    """The hits worth showing, best first (module docstring)."""
    words = {t.key for t in vocabulary.tokens(question)} - _CUE_WORDS
    scored = []
    for position, hit in enumerate(hits):
        heading = vocabulary.keys(_heading(hit.chunk))
        text = vocabulary.keys(hit.chunk.text)
        cover = (2 * len(words & heading) + len(words & text)) / (3 * len(words)) if words else 0.0
        precise = len(words & heading) / len(heading) if heading else 0.0  # "Roadshow" before "Cancelled roadshow events"
        scored.append((round(cover, 6), round(precise, 6), -position, hit))
    scored.sort(key=lambda s: (-s[0], -s[1], -s[2]))
    if not scored:
        return []
    best = scored[0][0]
    return [s[3] for s in scored if s[0] >= best * KEEP_SHARE][:MAX_PASSAGES]


def passages_answer(question: str, hits: Sequence[Any], vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> tuple[str, list[SourceDocument]]:
    """(Markdown answer, one source per file) for ``hits`` (``SearchHit``s)."""
    shown = rank(question, hits, vocabulary)
    numbers: dict[str, int] = {}
    parts = [HEADER]
    texts: dict[str, list[str]] = {}
    first: dict[str, Any] = {}
    for hit in shown:
        chunk = hit.chunk
        n = numbers.setdefault(chunk.source, len(numbers) + 1)
        heading = _heading(chunk) or chunk.source
        parts.append(f"**{heading}** — *{chunk.source}* [{n}]\n\n{_body(chunk.text)}")
        texts.setdefault(chunk.source, []).append(chunk.text.strip())
        first.setdefault(chunk.source, hit)
    sources = []
    for source, n in numbers.items():
        hit = first[source]
        sections = [_heading(h.chunk) for h in shown if h.chunk.source == source]
        sources.append(SourceDocument(
            source=source, content="\n\n".join(texts[source]), chunk_id=hit.chunk.id, score=round(hit.score, 6),
            metadata={"citation": n, "sections": [s for s in sections if s], "title": hit.chunk.title,
                      "start_line": hit.chunk.start_line, "end_line": hit.chunk.end_line, "format": hit.chunk.format,
                      "retrieval": hit.mode, "chunks": [h.chunk.id for h in shown if h.chunk.source == source]},
        ))
    return "\n\n".join(parts), sources


__all__ = ["HEADER", "passages_answer", "rank"]
