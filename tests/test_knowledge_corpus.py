"""The checked-in benchmark corpus stays loadable and its labels stay valid, and retrieval
on it does not regress (bench/knowledge_recall.py prints the full figures).

Where the floors come from. No seed or issue sets a number for document recall: issue 5 asks
that recall@5 be measured on held-out questions and printed, lexical and hybrid. Earlier this
test held recall@5 >= 0.70 and >= 0.74, set just under the measured 0.736 and 0.774 (issue 17):
numbers that follow from nothing and let two questions be lost unnoticed. What the
requirements do give:

- Issue 14, item 4: definition and policy questions reach documents. Every question here asks
  what a document of the corpus says (a policy, a product fact, where something is in the
  code), so each must find its chunk in the top 5. The ones that
  do not today are listed below by name, each a paraphrase in words its chunk does not use
  ("guarantee" for warranty, "present" for gift, "appraisals" for performance reviews, ...).
  A question outside the list that is not found fails the test by name; so does a listed one
  that is found now, to be taken off the list (the list only shrinks).
- Issue 5, item 2: vector similarity is added to BM25 when an embedding provider is
  configured, to find more. So hybrid retrieval must find at least as many as lexical alone;
  one that found fewer would make configuring embeddings a regression.
"""

from __future__ import annotations

import json
from pathlib import Path

from baton.specialists.knowledge import HashingEmbeddings, KnowledgeIndex

FIXTURES = Path(__file__).parent / "fixtures" / "knowledge"
QUESTIONS = json.loads((FIXTURES / "questions.json").read_text())


# The questions not found in the top 5 today (bench/knowledge_recall.py --misses shows what
# comes back instead); issue 14 item 4 wants every one found, so these lists may only shrink.
MISSED_BY_BOTH = {
    "How much do I get per day for food when working abroad?",
    "When will I get my money back for out-of-pocket costs?",
    "Is there an allowance for setting up a home office?",
    "How many vacation days do staff get?",
    "What should I do if I think my laptop was hacked?",
    "Can I keep a present from a supplier?",
    "How can I report wrongdoing without giving my name?",
    "When are appraisals held?",
    "How long is the guarantee on our products?",
    "Can we ship code to production over the Christmas holidays?",
    "Where in the code is the delivery charge computed?",
}
KNOWN_MISSES = {
    "lexical": MISSED_BY_BOTH | {"How far ahead do trips need to be reserved?",
                                 "Why do lights flicker when dimmed very low after the latest update?",
                                 "How long do customers have to send an item back?"},
    "hybrid": MISSED_BY_BOTH | {"Can I bring my dog to work?"},
}


async def missed_at_5(index: KnowledgeIndex, mode: str) -> set[str]:
    """The questions whose labelled chunk is not among the top 5 (raises on a label matching
    zero or several chunks)."""
    chunks = await index.chunks()
    missed = set()
    for item in QUESTIONS:
        [expected] = [c.id for c in chunks if c.source == item["source"] and (item["section"] is None or c.heading_path[-1] == item["section"])]
        if expected not in [h.chunk.id for h in await index.search(item["question"], 5, mode=mode)]:
            missed.add(item["question"])
    return missed


async def test_corpus_labels_and_retrieval_quality_floor():
    index = KnowledgeIndex(embeddings=HashingEmbeddings())
    report = await index.add_directory(FIXTURES / "corpus")
    assert not report.failed and len(report.added) == 39
    assert {"markdown", "text", "html", "code"} == {c.format for c in await index.chunks()}
    assert len(QUESTIONS) >= 30
    assert set().union(*KNOWN_MISSES.values()) <= {q["question"] for q in QUESTIONS}  # the lists name real questions
    missed = {mode: await missed_at_5(index, mode) for mode in ("lexical", "hybrid")}
    for mode, questions in missed.items():  # issue 14, item 4
        assert questions - KNOWN_MISSES[mode] == set(), f"{mode} no longer finds these in its top 5"
        assert KNOWN_MISSES[mode] - questions == set(), f"{mode} finds these now: take them off KNOWN_MISSES"
    assert len(missed["hybrid"]) <= len(missed["lexical"])  # issue 5, item 2: embeddings add, never lose
