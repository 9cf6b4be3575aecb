"""Does a question ask the documents or the data? The no-model router's probe.

With no model, a question that no verified question answers may still be answered by the
workspace's documents: "What is a roadshow?", "How are cancelled roadshow events handled?",
"What counts as revenue?". The router asks every knowledge index for its best passage on
every question (lexical search: no model, no embedding call) and weighs it against the
closest verified question:

- **coverage**: the share of the question's words (normalised as in ``baton.phrasing``,
  definition words such as "define", "mean", "handled" left out) found in the passage's
  heading and text; a heading that names one of them counts extra;
- **definition cue**: the question asks what something is, means, counts as, or how it is
  defined, calculated or handled ("what is", "define", "how are ... handled", "what counts
  as", "explain", "tell me about");
- **data cue**: the question asks for numbers (a year, a number, "how many", "most",
  "least", "average", "trend", "by month" ...).

Decisions: documents win when the passage covers at least half of the question's words, the
question carries a definition cue and no data cue; or, without a cue, when the passage
covers every word, names one in its heading, the question carries no data cue and no
verified question is close (similarity below 0.75). So "How is profit defined?" reaches the
documents, and "profit by city in 2024" never returns glossary passages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from baton.phrasing import DEFAULT_VOCABULARY, NUMBER, YEAR, Vocabulary

DEFINITION_CUE = re.compile(
    r"^\s*(?:what\s+(?:is|are|was|does|do)\b|what'?s\b|define\b|definitions?\b|meaning\b|explain\b|why\b|tell\s+me\s+about\b|"
    r"describe\b|who\s+(?:is|are)\b)|\b(?:defined|definition|mean|means|meaning|calculated|computed|handled|treated|counted|"
    r"recognised|recognized|measured|counts?\s+as|policy|rule|rules)\b",
    re.IGNORECASE,
)
DATA_CUE = re.compile(
    r"\b(?:how\s+many|how\s+much|most|least|top|bottom|highest|lowest|best|worst|average|avg|mean\s+of|median|total|sum|"
    r"trend|growth|compare|compared|versus|vs|per|by\s+(?:month|quarter|year|week|day|city|product|category|unit)|"
    r"each|every|monthly|quarterly|yearly|list\s+all|rank|ranking)\b",
    re.IGNORECASE,
)
_CUE_WORDS = frozenset("define mean meaning explain describe handle treat count calculate compute recognise recognize "
                       "measure policy rule tell about".split())
MIN_COVERAGE = 0.5
NEAR_VERIFIED = 0.75


@dataclass(frozen=True, slots=True)
class DocumentProbe:
    """How well the best passage of one knowledge tool covers the question."""

    tool: str
    coverage: float
    heading_hit: bool
    source: str = ""


def question_words(question: str, vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> frozenset[str]:
    return frozenset(t.key for t in vocabulary.tokens(question) if t.key not in _CUE_WORDS)


def has_data_cue(question: str, vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> bool:
    if DATA_CUE.search(question):
        return True
    return any(t.kind in (YEAR, NUMBER) for t in vocabulary.tokens(question))


async def probe(tool: str, agent: Any, question: str, vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> DocumentProbe | None:
    """The best passage's coverage in ``agent``'s index (a knowledge agent: ``.index``,
    optionally ``configure()`` to index its folder first). None when nothing is found."""
    words = question_words(question, vocabulary)
    if not words:
        return None
    configure = getattr(agent, "configure", None)
    if configure is not None:
        await configure()
    index = getattr(agent, "index", None)
    if index is None:
        return None
    hits = await index.search_lexical(question, 3)
    best: DocumentProbe | None = None
    for hit in hits:
        path = tuple(getattr(hit.chunk, "heading_path", ()) or ())
        title = vocabulary.keys(path[-1] if path else "")  # the section's own heading, not the document's
        text = vocabulary.keys(hit.chunk.text) | title
        covered = len(words & text) / len(words)
        found = DocumentProbe(tool, covered, bool(words & title), hit.chunk.source)
        if best is None or (found.coverage, found.heading_hit) > (best.coverage, best.heading_hit):
            best = found
    return best


def documents_win(question: str, found: DocumentProbe | None, verified_similarity: float,
                  vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> bool:
    """The decision in the module docstring."""
    if found is None or found.coverage < MIN_COVERAGE or has_data_cue(question, vocabulary):
        return False
    if DEFINITION_CUE.search(question):
        return True
    return found.coverage >= 1.0 and found.heading_hit and verified_similarity < NEAR_VERIFIED


__all__ = ["DATA_CUE", "DEFINITION_CUE", "DocumentProbe", "documents_win", "has_data_cue", "probe", "question_words"]
