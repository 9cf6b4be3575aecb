"""Tables ranked by meaning (issue 23): the real openai SDK against a local embeddings endpoint whose
vectors know that "participants" are people and "medications" are drugs, fused with the words."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from baton.specialists.knowledge import OpenAICompatibleEmbeddings
from baton.specialists.sql.prompts import relevant_tables
from baton.specialists.sql.schema import ColumnInfo, SchemaInfo, TableInfo
from baton.specialists.sql.table_embeddings import TableEmbeddings

CONCEPTS = [{"person", "participants", "participant", "people", "patients"},
            {"drug", "exposure", "medications", "medication", "drugs"},
            {"visit", "occurrence", "appointments"}]


def concept_vector(text: str) -> list[float]:
    words = {w.strip(".,:()?").lower() for w in text.replace("_", " ").split()}
    return [float(len(words & concept)) for concept in CONCEPTS] + [0.01]


class ConceptEmbeddings(BaseHTTPRequestHandler):
    requests: list[list[str]] = []
    fail = False

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body["input"])
        if self.fail:
            raw = json.dumps({"error": {"message": "down", "type": "server_error"}}).encode()
            self.send_response(500)
        else:
            data = [{"object": "embedding", "index": i, "embedding": concept_vector(t)} for i, t in enumerate(body["input"])]
            raw = json.dumps({"object": "list", "data": data, "model": body["model"],
                              "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@pytest.fixture
def concept_server():
    ConceptEmbeddings.requests, ConceptEmbeddings.fail = [], False
    server = ThreadingHTTPServer(("127.0.0.1", 0), ConceptEmbeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


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
    assert len(ConceptEmbeddings.requests[0]) == len(schema.tables)


async def test_a_failing_provider_leaves_the_word_ranking(concept_server):
    ConceptEmbeddings.fail = True
    embeddings = TableEmbeddings(OpenAICompatibleEmbeddings("concepts", base_url=concept_server, dimension=4, max_retries=0))
    schema = warehouse()
    assert await embeddings.ranking(schema, "participants", 3) == []
    assert [t.name for t in relevant_tables(schema, "participants", 3, meaning=[])]  # still answered by words
