"""The SQLite file behind a knowledge index: chunks, their FTS5 index, and vectors.

One connection, used from worker threads under a lock (``SQLiteDatabase.run``), so the
event loop never blocks on disk and one index can serve concurrent requests. The FTS5
table is an external-content index over ``chunks`` kept in step by triggers, tokenized with
``porter unicode61 remove_diacritics 2`` (English stemming, Unicode case folding, accents
ignored).

``SQLiteVectorStore`` keeps float32 blobs and searches by brute-force cosine with numpy over
a matrix it caches until the next write. That is exact and fast for small corpora — about
100k vectors of 768 dimensions is ~300 MB of RAM and tens of milliseconds per query on
one core; past that use a real vector index (``PgVectorStore`` or another ``VectorStore``).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from baton.specialists.knowledge.embeddings import EmbeddingModelInfo
from baton.specialists.knowledge.vector_store import check_store_model
from baton.sqlite_wal import write_ahead_log

T = TypeVar("T")

SCHEMA_VERSION = "1"
OPEN_WAIT_S = 5.0  # the busy timeout: how long a statement, and opening the file, waits for another writer

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    source TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    chunker TEXT NOT NULL,
    format TEXT NOT NULL,
    title TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    origin TEXT NOT NULL,
    indexed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL REFERENCES documents(source) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    title TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    format TEXT NOT NULL,
    metadata TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source, ordinal);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(content_hash);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, text, content='chunks', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, text) VALUES ('delete', old.rowid, old.title, old.text);
END;
CREATE TABLE IF NOT EXISTS vectors (
    content_hash TEXT NOT NULL,
    model_name TEXT NOT NULL,
    model_version TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (content_hash, model_name, model_version)
);
"""


class SQLiteDatabase:
    """A SQLite connection shared by an index and its vector store."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=OPEN_WAIT_S)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                write_ahead_log(self._conn, OPEN_WAIT_S)  # another process may be opening this new file too
            self._conn.executescript(_SCHEMA)
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))

    def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` now, in this thread, under the lock."""
        with self._lock:
            return fn(self._conn)

    runner: Callable[..., Any] | None = None  # how blocking calls run: a workspace's knowledge bulkhead (default: asyncio.to_thread)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` in a worker thread under the lock."""
        return await (self.runner or asyncio.to_thread)(self.call, fn)

    def transaction(self, fn: Callable[[sqlite3.Connection], T]) -> Callable[[sqlite3.Connection], T]:
        """Wrap ``fn`` so it runs inside BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error)."""

        def wrapped(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

        return wrapped

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class SQLiteVectorStore:
    """Vectors as float32 blobs next to the chunks; exact cosine search with numpy."""

    def __init__(self, database: SQLiteDatabase) -> None:
        self._db = database
        self._cache: tuple[EmbeddingModelInfo, list[str], np.ndarray] | None = None
        self._cache_lock = threading.Lock()

    async def stored_models(self) -> list[EmbeddingModelInfo]:
        rows = await self._db.run(
            lambda c: c.execute("SELECT DISTINCT model_name, model_version, dimension FROM vectors").fetchall()
        )
        return [EmbeddingModelInfo(name, version, dimension) for name, version, dimension in rows]

    async def missing(self, model: EmbeddingModelInfo, content_hashes: Collection[str]) -> set[str]:
        wanted = set(content_hashes)
        if not wanted:
            return set()

        def query(conn: sqlite3.Connection) -> set[str]:
            rows = conn.execute(
                "SELECT content_hash FROM vectors WHERE model_name = ? AND model_version = ? AND dimension = ?",
                (model.name, model.version, model.dimension),
            )
            return wanted - {row[0] for row in rows}

        return await self._db.run(query)

    async def upsert(self, model: EmbeddingModelInfo, content_hashes: Sequence[str], vectors: np.ndarray) -> None:
        if len(content_hashes) != len(vectors):
            raise ValueError("one vector per content hash")
        if not content_hashes:
            return
        check_store_model(await self.stored_models(), model, what="storing vectors")
        matrix = np.asarray(vectors, dtype=np.float32)
        rows = [
            (h, model.name, model.version, model.dimension, matrix[i].tobytes())
            for i, h in enumerate(content_hashes)
        ]

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)

        await self._db.run(self._db.transaction(write))
        self._invalidate()

    async def retain(self, content_hashes: Collection[str]) -> int:
        keep = list(set(content_hashes))

        def prune(conn: sqlite3.Connection) -> int:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS _keep (h TEXT PRIMARY KEY)")
            conn.execute("DELETE FROM _keep")
            conn.executemany("INSERT OR IGNORE INTO _keep VALUES (?)", ((h,) for h in keep))
            deleted = conn.execute("DELETE FROM vectors WHERE content_hash NOT IN (SELECT h FROM _keep)").rowcount
            conn.execute("DELETE FROM _keep")
            return deleted

        deleted = await self._db.run(self._db.transaction(prune))
        if deleted:
            self._invalidate()
        return deleted

    async def clear(self) -> int:
        deleted = await self._db.run(lambda c: c.execute("DELETE FROM vectors").rowcount)
        self._invalidate()
        return deleted

    async def search(self, model: EmbeddingModelInfo, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        check_store_model(await self.stored_models(), model, what="vector search")
        if k <= 0:
            return []
        # the matrix product and the top-k sort are tens of milliseconds at 100k vectors:
        # a worker thread's job, not the event loop's, and the knowledge bulkhead's thread
        # when the index has one (a busy default pool must not hold a document search)
        return await (self._db.runner or asyncio.to_thread)(self._search_sync, model, query, k)

    def _search_sync(self, model: EmbeddingModelInfo, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        hashes, matrix = self._matrix(model)
        if not hashes:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return []
        scores = matrix @ (q / norm)
        if k < len(hashes):
            part = np.argpartition(-scores, k - 1)[:k]
            top = part[np.argsort(-scores[part], kind="stable")]
        else:
            top = np.argsort(-scores, kind="stable")
        return [(hashes[i], float(scores[i])) for i in top]

    async def close(self) -> None:
        self._invalidate()

    # -- the cached, row-normalized matrix of one model's vectors
    def _matrix(self, model: EmbeddingModelInfo) -> tuple[list[str], np.ndarray]:
        with self._cache_lock:
            if self._cache is not None and self._cache[0] == model:
                return self._cache[1], self._cache[2]
            rows = self._db.call(
                lambda c: c.execute(
                    "SELECT content_hash, vector FROM vectors WHERE model_name = ? AND model_version = ? AND dimension = ?"
                    " ORDER BY content_hash",
                    (model.name, model.version, model.dimension),
                ).fetchall()
            )
            hashes = [row[0] for row in rows]
            matrix: np.ndarray = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), model.dimension)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = matrix / np.where(norms == 0, 1.0, norms)
            self._cache = (model, hashes, matrix)
            return hashes, matrix

    def _invalidate(self) -> None:
        with self._cache_lock:
            self._cache = None
