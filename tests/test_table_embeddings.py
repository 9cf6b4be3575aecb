"""Tables ranked by meaning (issue 23): the real openai SDK against a local embeddings endpoint whose
vectors know that "participants" are people and "medications" are drugs, fused with the words."""

from __future__ import annotations

import pytest

from baton.specialists.knowledge import OpenAICompatibleEmbeddings
from baton.specialists.sql.prompts import relevant_tables
from baton.specialists.sql.schema import ColumnInfo, SchemaInfo, TableInfo
from baton.specialists.sql.table_embeddings import TableEmbeddings
from embeddings_stub import EmbeddingsHandler, serve

CONCEPTS = [{"person", "participants", "participant", "people", "patients"},
            {"drug", "exposure", "medications", "medication", "drugs"},
            {"visit", "occurrence", "appointments"}]


def concept_vector(text: str) -> list[float]:
    words = {w.strip(".,:()?").lower() for w in text.replace("_", " ").split()}
    return [float(len(words & concept)) for concept in CONCEPTS] + [0.01]


class ConceptEmbeddings(EmbeddingsHandler):
    @staticmethod
    def vector(text: str, dimension: int) -> list[float]:
        return concept_vector(text)


@pytest.fixture
def concept_server():
    with serve(ConceptEmbeddings) as url:
        yield url


def warehouse() -> SchemaInfo:
    schema = SchemaInfo("duckdb")
    for name, columns in [("person", ["person_id", "year_of_birth"]), ("drug_exposure", ["person_id", "drug_concept_id"]),
                          ("visit_occurrence", ["person_id", "visit_start_date"])]:
        schema.add(TableInfo(name, [ColumnInfo(c, "INTEGER") for c in columns]))
    for i in range(30):
        schema.add(TableInfo(f"concept_relationship_{chr(97 + i % 26)}{i}", [ColumnInfo("concept_id_1", "INTEGER")]))
    return schema


async def test_meaning_finds_the_tables_words_cannot_and_is_computed_once_per_schema(concept_server):
    schema = warehouse()
    embeddings = TableEmbeddings(OpenAICompatibleEmbeddings("concepts", base_url=concept_server, dimension=4, max_retries=0))
    question = "How many participants took medications?"
    by_words = [t.name for t in relevant_tables(schema, question, 3)]
    assert "person" not in by_words and "drug_exposure" not in by_words  # no word in common
    meaning = await embeddings.ranking(schema, question, 3)
    assert set(meaning[:2]) == {"person", "drug_exposure"}
    fused = [t.name for t in relevant_tables(schema, question, 3, meaning=meaning)]
    assert {"person", "drug_exposure"} <= set(fused)
    await embeddings.ranking(schema, "appointments per participant", 3)
    assert len(ConceptEmbeddings.requests) == 3  # the tables once, then one question each
    assert len(ConceptEmbeddings.requests[0]["body"]["input"]) == len(schema.tables)


async def test_a_failing_provider_leaves_the_word_ranking(concept_server):
    embeddings = TableEmbeddings(OpenAICompatibleEmbeddings("broken", base_url=concept_server, dimension=4, max_retries=0))
    schema = warehouse()
    assert await embeddings.ranking(schema, "participants", 3) == []
    assert [t.name for t in relevant_tables(schema, "participants", 3, meaning=[])]  # still answered by words
