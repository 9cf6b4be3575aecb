"""The checked-in benchmark corpus stays loadable and its labels stay valid, and retrieval
on it does not regress below a floor (bench/knowledge_recall.py prints the full figures)."""

from __future__ import annotations

import json
from pathlib import Path

from baton.specialists.knowledge import HashingEmbeddings, KnowledgeIndex

FIXTURES = Path(__file__).parent / "fixtures" / "knowledge"
QUESTIONS = json.loads((FIXTURES / "questions.json").read_text())


async def recall_at_5(index: KnowledgeIndex, mode: str) -> float:
    chunks = await index.chunks()
    found = 0
    for item in QUESTIONS:
        [expected] = [c.id for c in chunks if c.source == item["source"] and (item["section"] is None or c.heading_path[-1] == item["section"])]
        found += expected in [h.chunk.id for h in await index.search(item["question"], 5, mode=mode)]
    return found / len(QUESTIONS)


async def test_corpus_labels_and_retrieval_quality_floor():
    index = KnowledgeIndex(embeddings=HashingEmbeddings())
    report = await index.add_directory(FIXTURES / "corpus")
    assert not report.failed and len(report.added) == 39
    assert {"markdown", "text", "html", "code"} == {c.format for c in await index.chunks()}
    assert len(QUESTIONS) >= 30
    # recall_at_5 raises on a label matching zero or several chunks
    assert await recall_at_5(index, "lexical") >= 0.70
    assert await recall_at_5(index, "hybrid") >= 0.74
