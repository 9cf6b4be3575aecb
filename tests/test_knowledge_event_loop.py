"""CPU work of the knowledge index (hashing embeddings, the cosine matrix product) runs in
worker threads, so one index serving many requests never stalls the event loop."""

from __future__ import annotations

import asyncio
import threading

from baton.specialists.knowledge import HashingEmbeddings, KnowledgeIndex, SQLiteVectorStore


class RecordingEmbeddings(HashingEmbeddings):
    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def embed_one(self, text):
        self.threads.add(threading.get_ident())
        return super().embed_one(text)


class RecordingStore(SQLiteVectorStore):
    threads: set[int]

    def _search_sync(self, model, query, k):
        self.threads.add(threading.get_ident())
        return super()._search_sync(model, query, k)


async def test_embedding_and_vector_scoring_run_off_the_event_loop():
    loop_thread = threading.get_ident()
    embeddings = RecordingEmbeddings()
    index = KnowledgeIndex(embeddings=embeddings)
    store = RecordingStore(index._db)
    store.threads = set()
    index.vector_store = store
    for n in range(3):
        await index.add_text(f"# Room {n}\n\nMeeting room {n} has a projector and {n + 4} chairs.", source=f"rooms/{n}.md")
    hits = await asyncio.gather(*(index.search("projector chairs", 2, mode="vector") for _ in range(5)))
    assert all(h and h[0].chunk.source.startswith("rooms/") for h in hits)
    assert embeddings.threads and loop_thread not in embeddings.threads
    assert store.threads and loop_thread not in store.threads
