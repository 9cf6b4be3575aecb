"""Embedding providers: the real openai SDK against a local embeddings endpoint, the local
sentence-transformers loader, the hashing embedding, and pgvector when the server has it."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from baton.errors import ProviderAuthError, ProviderServerError
from baton.specialists.knowledge import (
    EmbeddingConfigurationError,
    EmbeddingModelInfo,
    EmbeddingModelMismatchError,
    HashingEmbeddings,
    KnowledgeIndex,
    OpenAICompatibleEmbeddings,
    PgVectorStore,
    SentenceTransformerEmbeddings,
)
from embeddings_stub import EmbeddingsHandler, fake_vector, serve


@pytest.fixture
def embeddings_server():
    with serve(EmbeddingsHandler) as url:
        yield url


async def test_openai_compatible_embeddings_batch_and_keep_order(embeddings_server):
    provider = OpenAICompatibleEmbeddings("local-embed", base_url=embeddings_server, dimension=8, batch_size=2, max_retries=0)
    texts = ["alpha", "beta", "gamma", "", "delta"]
    vectors = await provider.embed(texts)
    assert vectors[0] == pytest.approx(fake_vector("alpha", 8))
    assert vectors[2] == pytest.approx(fake_vector("gamma", 8))
    assert vectors[3] == pytest.approx(fake_vector(" ", 8))  # empty input is sent as a space
    sent = [r["body"]["input"] for r in EmbeddingsHandler.requests]
    assert sent == [["alpha", "beta"], ["gamma", " "], ["delta"]]
    assert all(r["body"]["encoding_format"] == "float" and "dimensions" not in r["body"] for r in EmbeddingsHandler.requests)
    assert EmbeddingsHandler.requests[0]["path"] == "/v1/embeddings"
    assert (provider.name, provider.version, provider.dimension) == ("local-embed", "default", 8)


async def test_openai_compatible_embeddings_in_an_index(embeddings_server):
    provider = OpenAICompatibleEmbeddings("text-embedding-3-small", base_url=embeddings_server, api_key="k",
                                          dimension=16, request_dimensions=True, version="2024-01", max_retries=0)  # fmt: skip
    index = KnowledgeIndex(embeddings=provider)
    await index.add_text("# Hotels\n\nCapped at 180 EUR.", source="travel.md")
    hits = await index.search("Hotels\n\n# Hotels\n\nCapped at 180 EUR.", 1, mode="vector")
    assert hits[0].chunk.source == "travel.md" and hits[0].cosine == pytest.approx(1.0, abs=1e-5)
    assert EmbeddingsHandler.requests[0]["body"]["dimensions"] == 16
    assert EmbeddingsHandler.requests[0]["auth"] == "Bearer k"
    stats = await index.stats()
    assert stats["embedding_models"] == [{"name": "text-embedding-3-small", "version": "2024-01", "dimension": 16}]


async def test_openai_compatible_embedding_errors_are_provider_errors(embeddings_server):
    denied = OpenAICompatibleEmbeddings("denied", base_url=embeddings_server, dimension=8, max_retries=0)
    with pytest.raises(ProviderAuthError):
        await denied.embed(["x"])
    broken = OpenAICompatibleEmbeddings("broken", base_url=embeddings_server, dimension=8, max_retries=0)
    with pytest.raises(ProviderServerError) as info:
        await broken.embed(["x"])
    assert info.value.retryable


def test_openai_compatible_embeddings_need_a_known_dimension():
    assert OpenAICompatibleEmbeddings("text-embedding-3-large", api_key="k").dimension == 3072
    assert OpenAICompatibleEmbeddings("nomic-embed-text:latest", base_url="http://127.0.0.1:1/v1").dimension == 768
    with pytest.raises(EmbeddingConfigurationError, match="dimension"):
        OpenAICompatibleEmbeddings("my-custom-model", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(EmbeddingConfigurationError):
        OpenAICompatibleEmbeddings("")


def test_sentence_transformers_load_only_local_folders(tmp_path):
    with pytest.raises(EmbeddingConfigurationError, match="does not exist"):
        SentenceTransformerEmbeddings(tmp_path / "no-such-model")
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(EmbeddingConfigurationError, match="pip install sentence-transformers"):
            SentenceTransformerEmbeddings(tmp_path)
    else:  # pragma: no cover - the optional package is not installed in CI
        pytest.skip("sentence-transformers is installed; the missing-package path cannot be shown")


async def test_hashing_embeddings_are_deterministic_normalized_and_versioned():
    a, b = HashingEmbeddings(), HashingEmbeddings()
    [v1, v2] = await a.embed(["Refunds are reimbursed", "Refunds are reimbursed"])
    assert v1 == v2 == (await b.embed(["Refunds are reimbursed"]))[0]
    assert np.linalg.norm(v1) == pytest.approx(1.0)
    assert a.version == b.version
    assert HashingEmbeddings(synonyms=[("a", "b")]).version != a.version
    assert HashingEmbeddings(dimension=128).version != a.version
    near = a.embed_one("reimbursement of travel costs") @ a.embed_one("refund for trip expenses")
    far = a.embed_one("reimbursement of travel costs") @ a.embed_one("password rotation rules")
    assert near > 0.4 and far < 0.1
    assert not np.any(a.embed_one("the and of"))  # only stop words: the zero vector


# --- pgvector -------------------------------------------------------------------------------


async def _pgvector_available(url: str) -> bool:
    import psycopg

    from baton.specialists.knowledge.pgvector_store import _conninfo

    async with await psycopg.AsyncConnection.connect(_conninfo(url)) as conn:
        cur = await conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        return await cur.fetchone() is not None


@pytest.mark.postgres
async def test_pgvector_store_refuses_a_server_without_the_extension(postgres_url):
    if await _pgvector_available(postgres_url):
        pytest.skip("this server has pgvector; the refusal path cannot be shown")
    with pytest.raises(EmbeddingConfigurationError, match="no pgvector extension"):
        await PgVectorStore.open(postgres_url)


@pytest.mark.postgres
async def test_pgvector_store_round_trip_and_model_identity(postgres_url):
    if not await _pgvector_available(postgres_url):
        pytest.skip("the PostgreSQL server has no 'vector' extension in pg_available_extensions (pgvector not installed)")
    table = f"baton_kv_{uuid.uuid4().hex[:10]}"
    store = await PgVectorStore.open(postgres_url, table=table)
    try:
        embeddings = HashingEmbeddings(dimension=64)
        index = KnowledgeIndex(embeddings=embeddings, vector_store=store)
        await index.add_text("# Hotels\n\nHotel accommodation is capped at 180 EUR.", source="travel.md")
        await index.add_text("# Security\n\nPasswords rotate every 90 days.", source="security.md")
        hits = await index.search("lodging ceiling", 2, mode="vector")
        assert hits[0].chunk.source == "travel.md"
        other = EmbeddingModelInfo("baton-hashing", "other", 64)
        with pytest.raises(EmbeddingModelMismatchError):
            await store.search(other, np.ones(64, dtype=np.float32), 3)
        with pytest.raises(EmbeddingModelMismatchError):
            await store.upsert(other, ["h"], np.ones((1, 64), dtype=np.float32))
        assert await index.remove("security.md")
        assert len(await store.missing(EmbeddingModelInfo("baton-hashing", embeddings.version, 64), ["x"])) == 1
    finally:
        await store._conn.execute(f"DROP TABLE IF EXISTS {table}")
        await store.close()
