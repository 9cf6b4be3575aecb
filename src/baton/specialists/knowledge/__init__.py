"""The knowledge specialist: documents -> chunks -> a hybrid (BM25 + vector) index -> cited
answers.

Quick start::

    index = KnowledgeIndex("knowledge.db")                 # lexical (FTS5/BM25) only
    await index.add_directory("docs/")
    agent = KnowledgeAgent(index, model=my_chat_model)
    answer = await agent.ask("How long do refunds take?")  # AIMessage with cited sources

Add ``embeddings=OpenAICompatibleEmbeddings("text-embedding-3-small")`` (or a local
``SentenceTransformerEmbeddings(path)``) for hybrid retrieval.
"""

from baton.specialists.knowledge.agent import KnowledgeAgent
from baton.specialists.knowledge.chunks import Chunk, ChunkingOptions, Document
from baton.specialists.knowledge.embedding_providers import OpenAICompatibleEmbeddings, SentenceTransformerEmbeddings
from baton.specialists.knowledge.embeddings import EmbeddingModelInfo, EmbeddingProvider
from baton.specialists.knowledge.errors import (
    DocumentLoadError,
    EmbeddingConfigurationError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    KnowledgeError,
)
from baton.specialists.knowledge.fusion import reciprocal_rank_fusion
from baton.specialists.knowledge.hashing_embeddings import HashingEmbeddings
from baton.specialists.knowledge.index import IndexReport, KnowledgeIndex, SearchHit
from baton.specialists.knowledge.lexical import fts_match_expression
from baton.specialists.knowledge.loading import chunk_document, detect_format, document_from_text, load_document
from baton.specialists.knowledge.pdf_format import pdf_document_from_pages
from baton.specialists.knowledge.pgvector_store import PgVectorStore
from baton.specialists.knowledge.sqlite_store import SQLiteVectorStore
from baton.specialists.knowledge.vector_store import VectorStore

__all__ = [
    "Chunk", "ChunkingOptions", "Document", "DocumentLoadError", "EmbeddingConfigurationError", "EmbeddingError",
    "EmbeddingModelInfo", "EmbeddingModelMismatchError", "EmbeddingProvider", "HashingEmbeddings", "IndexReport",
    "KnowledgeAgent", "KnowledgeError", "KnowledgeIndex", "OpenAICompatibleEmbeddings", "PgVectorStore",
    "SQLiteVectorStore", "SearchHit", "SentenceTransformerEmbeddings", "VectorStore", "chunk_document",
    "detect_format", "document_from_text", "fts_match_expression", "load_document", "pdf_document_from_pages",
    "reciprocal_rank_fusion",
]
