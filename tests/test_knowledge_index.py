"""The knowledge index: sanitized FTS5 queries, BM25, incremental re-indexing, vectors that
carry their model's identity, hybrid retrieval."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.errors import ConfigurationError
from baton.specialists.knowledge import (
    EmbeddingError,
    EmbeddingModelMismatchError,
    HashingEmbeddings,
    KnowledgeIndex,
    fts_match_expression,
    reciprocal_rank_fusion,
)
from baton.specialists.knowledge.lexical import query_terms

DOCS = {
    "refunds.md": "# Refunds\n\nCustomers receive refunds within 14 days of the returned item arriving.\n",
    "security.md": "# Security\n\nPasswords must be rotated every 90 days and contain 12 characters.\n",
    "travel.md": "# Travel\n\n## Hotels\n\nHotel accommodation is capped at 180 EUR per night.\n\n"
    "## Meals\n\nThe daily meal allowance is 45 EUR.\n",
    "near.md": "# Operators\n\nThe words NEAR, AND, OR and NOT appear here as plain text.\n",
}


class CountingEmbeddings(HashingEmbeddings):
    """A real embedding provider that counts how many texts it was asked to embed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.embedded: list[str] = []

    async def embed(self, texts):
        self.embedded.extend(texts)
        return await super().embed(texts)


class BrokenEmbeddings(HashingEmbeddings):
    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    async def embed(self, texts):
        if self.mode == "raise":
            raise RuntimeError("embedding service down")
        if self.mode == "short":
            return [[0.0] * 8 for _ in texts]
        if self.mode == "nan":
            return [[float("nan")] * self.dimension for _ in texts]
        return []


async def filled(**kwargs) -> KnowledgeIndex:
    index = KnowledgeIndex(**kwargs)
    for source, text in DOCS.items():
        await index.add_text(text, source=source)
    return index


# --- query sanitizing -----------------------------------------------------------------------


def test_user_text_becomes_quoted_terms_only():
    assert fts_match_expression("How long do refunds take?") == '"long" OR "refunds" OR "take"'
    assert fts_match_expression('refund* NEAR(a b) "quoted" title:x -y ^z') == (
        '"refund" OR "near" OR "b" OR "quoted" OR "title" OR "x" OR "y" OR "z"'
    )
    assert fts_match_expression('" OR AND NOT ( ) * : ^ -') == '"or" OR "and" OR "not"'  # stop words kept when alone
    assert fts_match_expression("?!* ()") is None
    assert fts_match_expression("café Müller 東京") == '"café" OR "müller" OR "東京"'
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == 32


@pytest.mark.parametrize(
    "query",
    [
        '"', '"unbalanced', "refunds*", "*", "NEAR(refunds customers, 2)", "refunds AND", "OR OR OR",
        "NOT security", "title:Refunds", "{title text}:refunds", "^refunds", "refunds)", "((", "a:b:c",
        "'; DROP TABLE chunks; --", "-refunds", "+", "\x00", "refunds\nNEAR", "\\",
    ],
)  # fmt: skip
async def test_fts5_syntax_in_questions_neither_breaks_nor_injects(query):
    index = await filled()
    hits = await index.search_lexical(query, 10)
    assert all(hit.chunk.source in DOCS for hit in hits)
    if "refunds" in query.lower():
        assert hits[0].chunk.source == "refunds.md"
    assert len(await index.sources()) == len(DOCS)  # nothing was dropped


async def test_operator_words_are_searched_as_words():
    index = await filled()
    hits = await index.search_lexical("NEAR", 5)
    assert [h.chunk.source for h in hits] == ["near.md"]
    # "NOT security" must not exclude the security document: NOT is a word here
    assert "security.md" in [h.chunk.source for h in await index.search_lexical("NOT security", 5)]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_a_valid_fts5_query(text):
    expression = fts_match_expression(text)
    if expression is None:
        return
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t VALUES ('some text')")
    conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expression,)).fetchone()


# --- lexical retrieval ----------------------------------------------------------------------


async def test_bm25_ranks_the_answering_chunk_first_with_stemming():
    index = await filled()
    hits = await index.search_lexical("what is the nightly hotel cap", 3)
    assert hits[0].chunk.heading_path == ("Travel", "Hotels")
    assert hits[0].lexical_rank == 1 and hits[0].bm25 < 0 and hits[0].score == -hits[0].bm25
    rotated = await index.search_lexical("rotating passwords", 3)  # porter: rotating ~ rotated
    assert rotated[0].chunk.source == "security.md"
    assert await index.search_lexical("zebra giraffe", 3) == []
    assert await index.search("", 3) == []


# --- incremental re-indexing ----------------------------------------------------------------


async def test_reindexing_unchanged_documents_is_a_no_op():
    embeddings = CountingEmbeddings()
    index = await filled(embeddings=embeddings)
    chunks_before = await index.chunks()
    embedded_before = len(embeddings.embedded)
    assert embedded_before == len(chunks_before)
    for source, text in DOCS.items():
        report = await index.add_text(text, source=source)
        assert report.unchanged == [source] and report.chunks_written == 0
    assert await index.chunks() == chunks_before
    assert len(embeddings.embedded) == embedded_before
    assert (await index.stats())["chunks"] == len(chunks_before)


async def test_a_changed_document_replaces_its_chunks_and_embeds_only_new_text():
    embeddings = CountingEmbeddings()
    index = await filled(embeddings=embeddings)
    embeddings.embedded.clear()
    edited = DOCS["travel.md"].replace("45 EUR", "50 EUR")
    report = await index.add_text(edited, source="travel.md")
    assert report.updated == ["travel.md"] and report.texts_embedded == 1
    assert embeddings.embedded == ["Travel > Meals\n\n## Meals\n\nThe daily meal allowance is 50 EUR."]
    texts = [c.text for c in await index.chunks("travel.md")]
    assert "## Meals\n\nThe daily meal allowance is 50 EUR." in texts and not any("45 EUR" in t for t in texts)
    assert await index.search_lexical("45", 5) == []
    stats = await index.stats()
    assert stats["sqlite_vectors"] == stats["chunks"]  # the old vector was pruned


async def test_directory_reindex_adds_updates_removes_and_reports_failures(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha text.")
    (docs / "b.txt").write_text("Beta text.")
    (docs / "bad.txt").write_bytes(b"\0\0binary")
    index = KnowledgeIndex(tmp_path / "kb.sqlite")
    await index.add_text("Kept from elsewhere.", source="manual.txt")
    first = await index.add_directory(docs)
    assert sorted(first.added) == ["a.md", "b.txt"] and list(first.failed) == ["bad.txt"]
    (docs / "a.md").write_text("# A\n\nAlpha text, revised.")
    (docs / "b.txt").unlink()
    second = await index.add_directory(docs)
    assert (second.updated, second.removed, second.unchanged) == (["a.md"], ["b.txt"], [])
    assert await index.sources() == ["a.md", "manual.txt"]  # documents from elsewhere are not pruned
    await index.close()
    reopened = KnowledgeIndex(tmp_path / "kb.sqlite")
    third = await reopened.add_directory(docs)
    assert third.unchanged == ["a.md"] and not third.added
    assert [h.chunk.source for h in await reopened.search_lexical("revised alpha", 3)] == ["a.md"]
    await reopened.close()


@pytest.mark.parametrize("mode", ["raise", "short", "nan", "missing"])
async def test_a_failing_embedding_provider_loses_nothing(tmp_path, mode):
    path = tmp_path / "kb.sqlite"
    index = await filled(path=path, embeddings=HashingEmbeddings())
    before = await index.chunks()
    await index.close()
    broken = KnowledgeIndex(path, embeddings=BrokenEmbeddings(mode))  # same model identity, failing calls
    expected = RuntimeError if mode == "raise" else EmbeddingError
    with pytest.raises(expected):
        await broken.add_text(DOCS["travel.md"].replace("45", "99"), source="travel.md")
    assert await broken.chunks() == before  # the previous version is intact and searchable
    assert (await broken.search_lexical("meal allowance", 1))[0].chunk.text.endswith("45 EUR.")
    await broken.close()


async def test_remove_drops_chunks_and_vectors():
    index = await filled(embeddings=HashingEmbeddings())
    assert await index.remove("security.md") is True
    assert await index.remove("security.md") is False
    assert await index.search_lexical("passwords", 5) == []
    stats = await index.stats()
    assert stats["documents"] == len(DOCS) - 1 and stats["sqlite_vectors"] == stats["chunks"]


# --- vectors carry their model; models never mix ----------------------------------------------


async def test_every_vector_row_records_the_model_name_version_and_dimension(tmp_path):
    embeddings = HashingEmbeddings(dimension=64)
    index = KnowledgeIndex(tmp_path / "kb.sqlite", embeddings=embeddings)
    await index.add_text(DOCS["refunds.md"], source="refunds.md")
    await index.close()
    rows = sqlite3.connect(tmp_path / "kb.sqlite").execute(
        "SELECT model_name, model_version, dimension, length(vector) FROM vectors"
    ).fetchall()
    assert rows == [("baton-hashing", embeddings.version, 64, 64 * 4)]


async def test_a_different_model_is_refused_for_search_and_for_indexing(tmp_path):
    path = tmp_path / "kb.sqlite"
    index = await filled(path=path, embeddings=HashingEmbeddings())
    await index.close()
    for other in (
        HashingEmbeddings(dimension=256),                    # another dimension
        HashingEmbeddings(synonyms=[("car", "auto")]),       # same name, another version
    ):  # fmt: skip
        reopened = KnowledgeIndex(path, embeddings=other)
        with pytest.raises(EmbeddingModelMismatchError) as info:
            await reopened.search("hotel", 3)
        assert info.value.stored.version == HashingEmbeddings().version
        assert info.value.requested.version == other.version
        with pytest.raises(EmbeddingModelMismatchError):
            await reopened.add_text("New text about cars.", source="cars.md")
        assert "cars.md" not in await reopened.sources()
        assert (await reopened.search("hotel", 3, mode="lexical"))[0].chunk.source == "travel.md"
        await reopened.close()


async def test_reembed_is_the_explicit_way_to_switch_models(tmp_path):
    path = tmp_path / "kb.sqlite"
    await (await filled(path=path, embeddings=HashingEmbeddings())).close()
    new_model = CountingEmbeddings(dimension=128)
    index = KnowledgeIndex(path, embeddings=new_model)
    chunk_count = (await index.stats())["chunks"]
    assert await index.reembed() == chunk_count
    stats = await index.stats()
    assert stats["embedding_models"] == [{"name": "baton-hashing", "version": new_model.version, "dimension": 128}]
    assert (await index.search("hotel night", 1, mode="vector"))[0].chunk.heading_path == ("Travel", "Hotels")
    await index.close()


async def test_vector_modes_need_an_embedding_provider():
    index = await filled()
    with pytest.raises(ConfigurationError):
        await index.search("hotel", 3, mode="vector")
    with pytest.raises(ConfigurationError):
        await index.reembed()
    assert (await index.search("hotel", 3))[0].mode == "lexical"  # auto = lexical without embeddings


async def test_a_lexical_index_gets_vectors_when_embeddings_are_configured_later(tmp_path):
    path = tmp_path / "kb.sqlite"
    await (await filled(path=path)).close()
    embeddings = CountingEmbeddings()
    index = KnowledgeIndex(path, embeddings=embeddings)
    hits = await index.search("hotel", 3)
    assert hits[0].mode == "hybrid"
    stats = await index.stats()
    assert stats["sqlite_vectors"] == stats["chunks"] and len(embeddings.embedded) == stats["chunks"] + 1
    await index.close()


# --- hybrid retrieval -----------------------------------------------------------------------


def test_reciprocal_rank_fusion():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])
    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert [i for i, _ in reciprocal_rank_fusion([["a", "b"], ["b", "a"]])] == ["a", "b"]  # ties: first seen
    weighted = reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0, 2.0])
    assert [i for i, _ in weighted] == ["b", "a"]


async def test_hybrid_finds_paraphrases_that_bm25_misses():
    index = await filled(embeddings=HashingEmbeddings())
    question = "lodging reimbursement ceiling"  # synonyms of hotel / refund / cap: no word in common
    assert await index.search_lexical(question, 5) == []
    hits = await index.search(question, 3)
    assert hits[0].chunk.heading_path == ("Travel", "Hotels")
    assert hits[0].mode == "hybrid" and hits[0].vector_rank == 1 and hits[0].lexical_rank is None
    both = await index.search("refunds for customers", 3)
    assert both[0].chunk.source == "refunds.md" and both[0].lexical_rank == 1 and both[0].vector_rank == 1


async def test_vector_hits_below_the_similarity_floor_are_dropped():
    loose = await filled(embeddings=HashingEmbeddings())
    assert len(await loose.search("xylophone quasar", 5, mode="vector")) > 0  # hash collisions: tiny cosines
    index = await filled(embeddings=HashingEmbeddings(), min_similarity=0.1)
    assert await index.search("xylophone quasar", 5, mode="vector") == []
    assert (await index.search("hotel per night", 5, mode="vector"))[0].chunk.heading_path == ("Travel", "Hotels")
    strict = await filled(embeddings=HashingEmbeddings(), min_similarity=0.99)
    assert await strict.search("hotel", 5, mode="vector") == []


async def test_concurrent_searches_and_writes_share_one_index():
    import asyncio

    index = await filled(embeddings=HashingEmbeddings())
    searches = [index.search("hotel night cap", 2) for _ in range(20)]
    writes = [index.add_text(f"# Note {i}\n\nMeeting room {i} has a projector.", source=f"notes/{i}.md") for i in range(5)]
    results = await asyncio.gather(*searches, *writes)
    assert all(r[0].chunk.heading_path == ("Travel", "Hotels") for r in results[:20])
    assert len(await index.sources()) == len(DOCS) + 5
    stats = await index.stats()
    assert stats["sqlite_vectors"] == stats["chunks"]


async def test_add_file_indexes_html_with_a_relative_source(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "faq.html").write_text("<title>FAQ</title><h2>Shipping</h2><p>Parcels leave the warehouse daily.</p>")
    index = KnowledgeIndex()
    report = await index.add_file(site / "faq.html", root=tmp_path)
    assert report.added == ["site/faq.html"]
    [hit] = await index.search("when do parcels leave", 3)
    assert hit.chunk.heading_path == ("FAQ", "Shipping") and hit.chunk.format == "html"


async def test_a_hardened_index_searches_vectors_on_its_own_runner_not_the_default_pool():
    """A workspace puts its document indexes on its knowledge bulkhead: the vector search
    (the matrix product) runs there too, so a default pool held by something else does not
    hold a document search."""
    index = await filled(embeddings=HashingEmbeddings())
    ran: list[str] = []

    async def runner(fn, *args):
        ran.append(getattr(fn, "__name__", repr(fn)))
        return await asyncio.to_thread(fn, *args)

    index.run_blocking_on(runner)
    hits = await index.search_vector("How long do refunds take?", k=2)
    assert hits and "_search_sync" in ran


async def test_a_cited_chunk_is_found_by_its_id_until_its_text_changes():
    index = await filled()
    hit = (await index.search_lexical("refunds", 1))[0]
    assert await index.get_chunk(hit.chunk.id) == hit.chunk
    assert await index.get_chunk("refunds.md#99-00000000") is None
    await index.add_text("# Refunds\n\nRefunds now take 30 days.\n", source="refunds.md")
    assert await index.get_chunk(hit.chunk.id) is None
    fresh = (await index.search_lexical("refunds", 1))[0]
    assert (await index.get_chunk(fresh.chunk.id)).text == fresh.chunk.text and "30 days" in fresh.chunk.text
