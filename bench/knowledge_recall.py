"""Retrieval quality of the knowledge index on a small corpus with held-out questions.

The corpus (tests/fixtures/knowledge/corpus: 39 short policy, product, support, finance,
engineering and company documents of a fictional lighting company, in Markdown, plain text,
HTML and Python) and the questions (tests/fixtures/knowledge/questions.json: 53 questions
paraphrased by hand, each labelled with the one chunk that answers it, by file and section)
are checked in. Prints recall@1, recall@5 and MRR@10 for:

- lexical: SQLite FTS5 / BM25 only (the default, no embeddings);
- vector: HashingEmbeddings alone (the offline lexical-ish test embedding);
- hybrid: BM25 + HashingEmbeddings fused by reciprocal rank fusion;
- hybrid (no synonyms): the same with the embedding's synonym map switched off, to show how
  much of the gain comes from the map rather than from trigrams and stems.

Also prints indexing time and mean query latency per mode (on this machine, for scale only).

Run: .venv/bin/python bench/knowledge_recall.py [--misses]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from baton.specialists.knowledge import HashingEmbeddings, KnowledgeIndex

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "knowledge"
K_RECALL = 5
K_MRR = 10


def label_to_chunk_id(chunks, source: str, section: str | None) -> str:
    matches = [c for c in chunks if c.source == source and (section is None or c.heading_path[-1] == section)]
    if len(matches) != 1:
        raise SystemExit(f"label {source} / {section} matches {len(matches)} chunks; fix the label")
    return matches[0].id


async def evaluate(name: str, index: KnowledgeIndex, mode: str, questions, show_misses: bool) -> dict[str, float]:
    chunks = await index.chunks()
    hits_at_1 = hits_at_k = 0
    reciprocal = 0.0
    latency = 0.0
    misses = []
    for item in questions:
        expected = label_to_chunk_id(chunks, item["source"], item["section"])
        started = time.perf_counter()
        hits = await index.search(item["question"], K_MRR, mode=mode)
        latency += time.perf_counter() - started
        ranked = [h.chunk.id for h in hits]
        rank = ranked.index(expected) + 1 if expected in ranked else None
        hits_at_1 += rank == 1
        hits_at_k += rank is not None and rank <= K_RECALL
        reciprocal += 1.0 / rank if rank else 0.0
        if rank is None or rank > K_RECALL:
            misses.append((item["question"], expected, ranked[:3]))
    n = len(questions)
    result = {
        "recall@1": hits_at_1 / n, f"recall@{K_RECALL}": hits_at_k / n, f"MRR@{K_MRR}": reciprocal / n,
        "ms/query": latency / n * 1000,
    }  # fmt: skip
    print(
        f"{name:<22} recall@1={result['recall@1']:.3f}  recall@{K_RECALL}={result[f'recall@{K_RECALL}']:.3f} "
        f"({hits_at_k}/{n})  MRR@{K_MRR}={result[f'MRR@{K_MRR}']:.3f}  {result['ms/query']:.2f} ms/query"
    )
    if show_misses:
        for question, expected, top in misses:
            print(f"    miss: {question!r}\n          want {expected}\n          got  {top}")
    return result


async def build(embeddings) -> tuple[KnowledgeIndex, float]:
    index = KnowledgeIndex(embeddings=embeddings)
    started = time.perf_counter()
    report = await index.add_directory(FIXTURES / "corpus")
    elapsed = time.perf_counter() - started
    if report.failed:
        raise SystemExit(f"corpus files failed to load: {report.failed}")
    return index, elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list the questions whose chunk is not in the top 5")
    args = parser.parse_args()
    questions = json.loads((FIXTURES / "questions.json").read_text())

    lexical, lexical_s = await build(None)
    hashing, hashing_s = await build(HashingEmbeddings())
    plain, _ = await build(HashingEmbeddings(synonyms=()))
    stats = await lexical.stats()
    print(
        f"corpus: {stats['documents']} documents, {stats['chunks']} chunks; {len(questions)} held-out questions; "
        f"indexing {lexical_s * 1000:.0f} ms lexical, {hashing_s * 1000:.0f} ms with hashing embeddings"
    )
    await evaluate("lexical (BM25)", lexical, "lexical", questions, args.misses)
    await evaluate("vector (hashing)", hashing, "vector", questions, args.misses)
    await evaluate("hybrid (BM25+hashing)", hashing, "hybrid", questions, args.misses)
    await evaluate("hybrid, no synonyms", plain, "hybrid", questions, args.misses)
    for index in (lexical, hashing, plain):
        await index.close()


if __name__ == "__main__":
    asyncio.run(main())
