"""``KnowledgeIndex``: documents in, ranked chunks out.

Lexical retrieval (SQLite FTS5, BM25) always works and needs nothing else. When an
``EmbeddingProvider`` is configured, chunks are also embedded and retrieval becomes hybrid:
BM25 and cosine rankings fused by reciprocal rank fusion (``fusion.py``).

Re-indexing is incremental and idempotent: a document whose text (and chunking settings)
did not change is skipped; a changed one has its chunks replaced in one transaction; only
chunk texts never embedded before are sent to the embedding provider (vectors are keyed by
content hash). Embedding happens *before* the chunks are written, so a failing provider
leaves the previous version of the document searchable and loses nothing.

Model identity (seed 002 rule 2): every vector row records the model's name, version and
dimension; an index whose vectors came from another model refuses to add or search vectors
(``EmbeddingModelMismatchError``) until ``reembed()`` is called explicitly. Lexical search
keeps working either way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from baton.errors import ConfigurationError
from baton.files import Skipped
from baton.specialists.knowledge.chunks import Chunk, ChunkingOptions, Document, text_hash
from baton.specialists.knowledge.embeddings import EmbeddingProvider, embed_checked, model_info
from baton.specialists.knowledge.errors import DocumentLoadError
from baton.specialists.knowledge.fusion import reciprocal_rank_fusion
from baton.specialists.knowledge.lexical import fts_match_expression
from baton.specialists.knowledge.loading import DEFAULT_MAX_BYTES, chunk_document, document_listing, load_document
from baton.specialists.knowledge.sqlite_store import SQLiteDatabase, SQLiteVectorStore
from baton.specialists.knowledge.vector_store import VectorStore, check_store_model

CHUNKER_VERSION = "1"
SearchMode = Literal["auto", "lexical", "vector", "hybrid"]
TITLE_WEIGHT = 2.0  # BM25 column weight of the heading path relative to the body text
EMBED_BATCH = 256


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A retrieved chunk. ``score`` is the fused RRF score in hybrid mode, ``-bm25`` in
    lexical mode and the cosine in vector mode (higher is better in every mode); the
    per-retriever ranks (1-based) and raw scores say how each retriever saw it."""

    chunk: Chunk
    score: float
    mode: str
    lexical_rank: int | None = None
    vector_rank: int | None = None
    bm25: float | None = None
    cosine: float | None = None


@dataclass
class IndexReport:
    """What one indexing call did, per source."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)  # what the folder walk did not read, with typed reasons
    chunks_written: int = 0
    texts_embedded: int = 0

    def merge(self, other: IndexReport) -> None:
        for name in ("added", "updated", "unchanged", "removed"):
            getattr(self, name).extend(getattr(other, name))
        self.failed.update(other.failed)
        self.skipped.extend(other.skipped)
        self.chunks_written += other.chunks_written
        self.texts_embedded += other.texts_embedded


class KnowledgeIndex:
    """A searchable set of chunked documents in one SQLite file (``":memory:"`` by default).

    ``embeddings`` turns on vector and hybrid retrieval; ``vector_store`` defaults to float32
    blobs in the same SQLite file (``PgVectorStore`` is the scale-out choice). Vector hits
    with a cosine at or below ``min_similarity`` are dropped: 0.0 drops only unrelated
    texts of lexical-ish embeddings; semantic models want a model-specific floor (often
    0.2-0.35), or an unrelated question still "finds" the nearest chunks.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        embeddings: EmbeddingProvider | None = None,
        vector_store: VectorStore | None = None,
        chunking: ChunkingOptions | None = None,
        min_similarity: float = 0.0,
    ) -> None:
        self._db = SQLiteDatabase(path)
        self.embeddings = embeddings
        self.vector_store: VectorStore = vector_store or SQLiteVectorStore(self._db)
        self.chunking = chunking or ChunkingOptions()
        self.min_similarity = min_similarity
        self._chunker_id = text_hash(f"{CHUNKER_VERSION}:{self.chunking!r}")[:16]
        self._write_lock = asyncio.Lock()
        self._vectors_synced = False

    def run_blocking_on(self, runner: Callable[..., Any]) -> None:
        """Run this index's blocking SQLite calls with ``runner`` (``await runner(fn, *args)``,
        a workspace's knowledge bulkhead) instead of ``asyncio.to_thread``; a runner already
        set is kept (the first workspace to harden the index owns it)."""
        if self._db.runner is None:
            self._db.runner = runner

    # -- indexing ------------------------------------------------------------------------
    async def add_document(self, document: Document) -> IndexReport:
        """Index (or re-index) one loaded document."""
        async with self._write_lock:
            report = await self._add(document, origin="")
            if report.updated:
                await self._prune_vectors()
            return report

    async def add_text(self, text: str, *, source: str, format: str | None = None, title: str | None = None) -> IndexReport:
        """Index text held in memory under the name ``source``."""
        from baton.specialists.knowledge.loading import document_from_text

        return await self.add_document(document_from_text(text, source=source, format=format, title=title))

    async def add_file(self, path: str | Path, *, root: str | Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> IndexReport:
        """Load and index one file (``source`` is its path relative to ``root`` if given)."""
        document = await asyncio.to_thread(load_document, path, root=root, max_bytes=max_bytes)
        return await self.add_document(document)

    async def add_directory(self, directory: str | Path, *, prune: bool = True, max_bytes: int = DEFAULT_MAX_BYTES) -> IndexReport:
        """Index every supported file under ``directory`` (sources relative to it). Files that
        fail to load are reported in ``failed`` and do not stop the others; with ``prune``,
        documents indexed from this directory before that no longer exist are removed."""
        listing = await asyncio.to_thread(document_listing, directory, max_bytes=max_bytes)
        files = [Path(directory) / entry.relative for entry in listing.files]
        origin = await asyncio.to_thread(lambda: Path(directory).resolve().as_posix())
        report = IndexReport(skipped=list(listing.skipped))
        report.failed.update((item.path, str(item)) for item in listing.skipped if not item.reason.quiet)
        seen: set[str] = set(report.failed)
        async with self._write_lock:
            for path in files:
                try:
                    document = await asyncio.to_thread(load_document, path, root=directory, max_bytes=max_bytes)
                except DocumentLoadError as exc:
                    report.failed[exc.source or str(path)] = str(exc)
                    seen.add(exc.source)
                    continue
                seen.add(document.source)
                report.merge(await self._add(document, origin=origin))
            if prune:
                gone = [s for s in await self._sources_from(origin) if s not in seen]
                for source in gone:
                    await self._db.run(self._db.transaction(functools.partial(_delete_document, source=source)))
                report.removed.extend(gone)
            if report.updated or report.removed:
                await self._prune_vectors()
        return report

    async def remove(self, source: str) -> bool:
        """Remove one document and its chunks; False when it was not indexed."""
        async with self._write_lock:
            removed = await self._db.run(self._db.transaction(lambda c: _delete_document(c, source)))
            if removed:
                await self._prune_vectors()
            return removed

    async def reembed(self) -> int:
        """Explicitly replace every stored vector with the configured model's: the one way to
        switch embedding models. Returns how many texts were embedded."""
        provider = self._require_embeddings("reembed()")
        async with self._write_lock:
            await self.vector_store.clear()
            self._vectors_synced = False
            return await self._sync_vectors(provider)

    async def _add(self, document: Document, *, origin: str) -> IndexReport:
        report = IndexReport()
        existing = await self._db.run(
            lambda c: c.execute("SELECT content_hash, chunker FROM documents WHERE source = ?", (document.source,)).fetchone()
        )
        if existing == (document.content_hash, self._chunker_id):
            report.unchanged.append(document.source)
            return report
        chunks = await asyncio.to_thread(chunk_document, document, self.chunking)
        if self.embeddings is not None:
            report.texts_embedded = await self._embed_missing(self.embeddings, chunks)
        write = self._db.transaction(lambda c: _replace_document(c, document, chunks, self._chunker_id, origin))
        await self._db.run(write)
        (report.updated if existing else report.added).append(document.source)
        report.chunks_written = len(chunks)
        return report

    async def _embed_missing(self, provider: EmbeddingProvider, chunks: Sequence[Chunk]) -> int:
        model = model_info(provider)
        check_store_model(await self.vector_store.stored_models(), model, what="indexing")
        texts = {c.content_hash: c.embed_text for c in chunks}
        missing = sorted(await self.vector_store.missing(model, texts.keys()))
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            vectors = await embed_checked(provider, [texts[h] for h in batch])
            await self.vector_store.upsert(model, batch, vectors)
        return len(missing)

    async def _sync_vectors(self, provider: EmbeddingProvider) -> int:
        """Embed every chunk that has no vector from the configured model (an index built
        lexical-only, or by an interrupted run)."""
        chunks = await self._db.run(lambda c: [_row_to_chunk(r) for r in c.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks")])
        embedded = await self._embed_missing(provider, chunks)
        self._vectors_synced = True
        return embedded

    async def _prune_vectors(self) -> None:
        hashes = await self._db.run(lambda c: {r[0] for r in c.execute("SELECT DISTINCT content_hash FROM chunks")})
        await self.vector_store.retain(hashes)

    # -- retrieval -----------------------------------------------------------------------
    async def search(self, query: str, k: int = 5, *, mode: SearchMode = "auto") -> list[SearchHit]:
        """The ``k`` best chunks for ``query``. ``auto`` is hybrid when embeddings are
        configured, else lexical."""
        if k <= 0:
            return []
        if mode == "auto":
            mode = "hybrid" if self.embeddings is not None else "lexical"
        if mode == "lexical":
            return await self.search_lexical(query, k)
        if mode == "vector":
            return await self.search_vector(query, k)
        if mode != "hybrid":
            raise ValueError(f"unknown search mode {mode!r}")
        pool = max(k * 4, 20)
        lexical, vector = await asyncio.gather(self.search_lexical(query, pool), self.search_vector(query, pool))
        by_id = {hit.chunk.id: hit for hit in vector}
        by_id.update({hit.chunk.id: hit for hit in lexical})
        lexical_ranks = {hit.chunk.id: i for i, hit in enumerate(lexical, start=1)}
        vector_hits = {hit.chunk.id: hit for hit in vector}
        fused = reciprocal_rank_fusion([[h.chunk.id for h in lexical], [h.chunk.id for h in vector]])
        hits = []
        for chunk_id, score in fused[:k]:
            lexical_hit = by_id[chunk_id] if chunk_id in lexical_ranks else None
            vector_hit = vector_hits.get(chunk_id)
            hits.append(
                SearchHit(
                    chunk=by_id[chunk_id].chunk, score=score, mode="hybrid",
                    lexical_rank=lexical_ranks.get(chunk_id), vector_rank=vector_hit.vector_rank if vector_hit else None,
                    bm25=lexical_hit.bm25 if lexical_hit else None, cosine=vector_hit.cosine if vector_hit else None,
                )  # fmt: skip
            )
        return hits

    async def search_lexical(self, query: str, k: int = 5) -> list[SearchHit]:
        """BM25 over heading paths and texts; the question is sanitized, never FTS5 syntax."""
        expression = fts_match_expression(query)
        if expression is None or k <= 0:
            return []
        sql = (
            f"SELECT {_CHUNK_COLUMNS_C}, bm25(chunks_fts, ?, 1.0) AS bm25_score FROM chunks_fts"
            " JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? ORDER BY bm25_score, c.rowid LIMIT ?"
        )
        rows = await self._db.run(lambda c: c.execute(sql, (TITLE_WEIGHT, expression, k)).fetchall())
        return [
            SearchHit(chunk=_row_to_chunk(row[:-1]), score=-row[-1], mode="lexical", lexical_rank=i, bm25=row[-1])
            for i, row in enumerate(rows, start=1)
        ]

    async def search_vector(self, query: str, k: int = 5) -> list[SearchHit]:
        """Cosine similarity between the query's and the chunks' embeddings."""
        provider = self._require_embeddings("vector search")
        if not query.strip() or k <= 0:
            return []
        model = model_info(provider)
        check_store_model(await self.vector_store.stored_models(), model, what="vector search")
        if not self._vectors_synced:
            async with self._write_lock:
                if not self._vectors_synced:
                    await self._sync_vectors(provider)
        query_vector = (await embed_checked(provider, [query]))[0]
        matches = await self.vector_store.search(model, query_vector, k)
        chunks_by_hash = await self._chunks_for_hashes([h for h, _ in matches])
        hits: list[SearchHit] = []
        for content_hash, cosine in matches:
            if cosine <= self.min_similarity:
                break
            for chunk in chunks_by_hash.get(content_hash, ()):
                hits.append(SearchHit(chunk=chunk, score=cosine, mode="vector", vector_rank=len(hits) + 1, cosine=cosine))
        return hits[:k]

    async def get_chunk(self, chunk_id: str) -> Chunk | None:
        """The chunk an answer cites (``SourceDocument.chunk_id``, ``SearchHit.chunk.id``), or
        None when no chunk has that id any more (its document changed and was re-indexed:
        an id names one text of one place in one source)."""
        row = await self._db.run(lambda c: c.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id = ?", (chunk_id,)).fetchone())
        return _row_to_chunk(row) if row else None

    async def chunks(self, source: str | None = None) -> list[Chunk]:
        """Every chunk (of one source when given), in document order."""
        where, args = ("WHERE source = ?", (source,)) if source is not None else ("", ())
        sql = f"SELECT {_CHUNK_COLUMNS} FROM chunks {where} ORDER BY source, ordinal"
        return await self._db.run(lambda c: [_row_to_chunk(r) for r in c.execute(sql, args)])

    async def sources(self) -> list[str]:
        return await self._db.run(lambda c: [r[0] for r in c.execute("SELECT source FROM documents ORDER BY source")])

    async def _sources_from(self, origin: str) -> list[str]:
        sql = "SELECT source FROM documents WHERE origin = ? ORDER BY source"
        return await self._db.run(lambda c: [r[0] for r in c.execute(sql, (origin,))])

    async def stats(self) -> dict[str, object]:
        counts = await self._db.run(
            lambda c: c.execute("SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks), (SELECT count(*) FROM vectors)").fetchone()
        )
        models = [dataclasses.asdict(m) for m in await self.vector_store.stored_models()]
        return {"documents": counts[0], "chunks": counts[1], "sqlite_vectors": counts[2], "embedding_models": models}

    async def close(self) -> None:
        await self.vector_store.close()
        self._db.close()

    async def __aenter__(self) -> KnowledgeIndex:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _chunks_for_hashes(self, hashes: Iterable[str]) -> dict[str, list[Chunk]]:
        hashes = list(hashes)
        if not hashes:
            return {}
        marks = ",".join("?" * len(hashes))
        sql = f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE content_hash IN ({marks}) ORDER BY source, ordinal"
        found: dict[str, list[Chunk]] = {}
        for chunk in await self._db.run(lambda c: [_row_to_chunk(r) for r in c.execute(sql, hashes)]):
            found.setdefault(chunk.content_hash, []).append(chunk)
        return found

    def _require_embeddings(self, what: str) -> EmbeddingProvider:
        if self.embeddings is None:
            raise ConfigurationError(f"{what} needs an embedding provider: KnowledgeIndex(..., embeddings=...)")
        return self.embeddings


_FIELDS = "id, source, ordinal, heading_path, start_line, end_line, text, content_hash, format, metadata"
_CHUNK_COLUMNS = _FIELDS
_CHUNK_COLUMNS_C = ", ".join(f"c.{name.strip()}" for name in _FIELDS.split(","))


def _row_to_chunk(row: Sequence) -> Chunk:
    chunk_id, source, ordinal, heading_path, start, end, text, content_hash, fmt, metadata = row
    return Chunk(
        id=chunk_id, source=source, ordinal=ordinal, heading_path=tuple(json.loads(heading_path)),
        start_line=start, end_line=end, text=text, content_hash=content_hash, format=fmt,
        metadata=json.loads(metadata),
    )  # fmt: skip


def _replace_document(
    conn: sqlite3.Connection, document: Document, chunks: Sequence[Chunk], chunker_id: str, origin: str
) -> None:
    conn.execute("DELETE FROM chunks WHERE source = ?", (document.source,))
    conn.execute(
        "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (document.source, document.content_hash, chunker_id, document.format, document.title, len(chunks), origin,
         dt.datetime.now(dt.UTC).isoformat()),
    )  # fmt: skip
    conn.executemany(
        "INSERT INTO chunks (id, source, ordinal, title, heading_path, start_line, end_line, text, content_hash, format, metadata)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (c.id, c.source, c.ordinal, c.title, json.dumps(list(c.heading_path)), c.start_line, c.end_line, c.text,
             c.content_hash, c.format, json.dumps(dict(c.metadata), default=str))
            for c in chunks
        ],
    )  # fmt: skip


def _delete_document(conn: sqlite3.Connection, source: str) -> bool:
    conn.execute("DELETE FROM chunks WHERE source = ?", (source,))
    return conn.execute("DELETE FROM documents WHERE source = ?", (source,)).rowcount > 0
