"""``PgVectorStore``: knowledge vectors in PostgreSQL with the pgvector extension.

The scale-out counterpart of ``SQLiteVectorStore``: same interface, same identity rule —
every row carries the embedding model's name, version and dimension, and a store holding
another model's vectors refuses to mix or compare (``EmbeddingModelMismatchError``).
``collection`` lets several indexes share one table.

Decisions: the ``vector`` column has no fixed dimension (one table serves any model) and
search is exact (``ORDER BY embedding <=> query``, cosine distance). For millions of rows,
add an HNSW index on an expression cast to a fixed dimension, per model —
``CREATE INDEX ... USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE
model_name = '...'`` — which this class does not create because it depends on the model.
The extension must be *available* on the server; ``open()`` creates it when allowed and
raises ``EmbeddingConfigurationError`` when it is not installed there.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from baton.specialists.knowledge.embeddings import EmbeddingModelInfo
from baton.specialists.knowledge.errors import EmbeddingConfigurationError
from baton.specialists.knowledge.vector_store import check_store_model

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _conninfo(url: str) -> str:
    """Accept SQLAlchemy-style URLs (``postgresql+psycopg://``) as well as libpq ones."""
    return re.sub(r"^postgres(?:ql)?\+\w+://", "postgresql://", url)


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32).reshape(-1)) + "]"


class PgVectorStore:
    """Vectors in a PostgreSQL table; create with ``await PgVectorStore.open(url)``."""

    def __init__(self, connection: Any, *, table: str, collection: str) -> None:
        self._conn = connection
        self.table = table
        self.collection = collection

    @classmethod
    async def open(cls, url: str, *, table: str = "baton_knowledge_vectors", collection: str = "default") -> PgVectorStore:
        if not _IDENTIFIER.match(table):
            raise EmbeddingConfigurationError(f"invalid table name {table!r}")
        import psycopg

        conn = await psycopg.AsyncConnection.connect(_conninfo(url), autocommit=True)
        try:
            cur = await conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            if await cur.fetchone() is None:
                raise EmbeddingConfigurationError(
                    "the PostgreSQL server has no pgvector extension available (pg_available_extensions "
                    "has no 'vector'); install pgvector on the server or use the SQLite vector store"
                )
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table} ("
                " collection TEXT NOT NULL, content_hash TEXT NOT NULL, model_name TEXT NOT NULL,"
                " model_version TEXT NOT NULL, dimension INTEGER NOT NULL, embedding vector NOT NULL,"
                " PRIMARY KEY (collection, content_hash, model_name, model_version))"
            )
        except BaseException:
            await conn.close()
            raise
        return cls(conn, table=table, collection=collection)

    async def stored_models(self) -> list[EmbeddingModelInfo]:
        cur = await self._conn.execute(
            f"SELECT DISTINCT model_name, model_version, dimension FROM {self.table} WHERE collection = %s",
            (self.collection,),
        )
        return [EmbeddingModelInfo(*row) for row in await cur.fetchall()]

    async def missing(self, model: EmbeddingModelInfo, content_hashes: Collection[str]) -> set[str]:
        wanted = list(set(content_hashes))
        if not wanted:
            return set()
        cur = await self._conn.execute(
            f"SELECT content_hash FROM {self.table} WHERE collection = %s AND model_name = %s"
            " AND model_version = %s AND dimension = %s AND content_hash = ANY(%s)",
            (self.collection, model.name, model.version, model.dimension, wanted),
        )
        return set(wanted) - {row[0] for row in await cur.fetchall()}

    async def upsert(self, model: EmbeddingModelInfo, content_hashes: Sequence[str], vectors: np.ndarray) -> None:
        if len(content_hashes) != len(vectors):
            raise ValueError("one vector per content hash")
        if not content_hashes:
            return
        check_store_model(await self.stored_models(), model, what="storing vectors")
        rows = [
            (self.collection, h, model.name, model.version, model.dimension, _vector_literal(vectors[i]))
            for i, h in enumerate(content_hashes)
        ]
        async with self._conn.transaction():
            async with self._conn.cursor() as cur:
                await cur.executemany(
                    f"INSERT INTO {self.table} VALUES (%s, %s, %s, %s, %s, %s::vector)"
                    " ON CONFLICT (collection, content_hash, model_name, model_version)"
                    " DO UPDATE SET embedding = EXCLUDED.embedding, dimension = EXCLUDED.dimension",
                    rows,
                )

    async def retain(self, content_hashes: Collection[str]) -> int:
        cur = await self._conn.execute(
            f"DELETE FROM {self.table} WHERE collection = %s AND NOT (content_hash = ANY(%s))",
            (self.collection, list(set(content_hashes))),
        )
        return cur.rowcount

    async def clear(self) -> int:
        cur = await self._conn.execute(f"DELETE FROM {self.table} WHERE collection = %s", (self.collection,))
        return cur.rowcount

    async def search(self, model: EmbeddingModelInfo, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        check_store_model(await self.stored_models(), model, what="vector search")
        if k <= 0:
            return []
        literal = _vector_literal(query)
        cur = await self._conn.execute(
            f"SELECT content_hash, 1 - (embedding <=> %s::vector) AS cosine FROM {self.table}"
            " WHERE collection = %s AND model_name = %s AND model_version = %s AND dimension = %s"
            " ORDER BY embedding <=> %s::vector, content_hash LIMIT %s",
            (literal, self.collection, model.name, model.version, model.dimension, literal, k),
        )
        return [(h, float(cosine)) for h, cosine in await cur.fetchall()]

    async def close(self) -> None:
        await self._conn.close()
