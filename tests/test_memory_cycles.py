"""The three learning cycles and what reaches a model: decay, promotion, transfer,
the bundle and its lock, doctrine, feedback, validation (with a scripted model), artifacts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from baton.errors import ProviderServerError
from baton.llm.testing import ScriptedModel
from baton.memory import (
    ArtifactError,
    Feedback,
    InvalidRecordError,
    MemoryStore,
    Principal,
    Provenance,
    RecordDraft,
    TrustedAuthenticator,
    compile_bundle,
    export_artifact,
    global_patterns,
    import_artifact,
    index_doctrine,
    ingest_learnings,
    promote,
    record_feedback,
    record_validation,
    run_decay,
    sibling_learnings,
)

DAY = 86400.0


class Clock:
    def __init__(self):
        self.t = 1_700_000_000.0

    def __call__(self):
        return self.t

    def advance(self, days):
        self.t += days * DAY


@dataclass
class ExtractedLearning:  # the shape the SQL specialist produces
    category: str
    lesson: str
    tables: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    connection_id: str | None = None
    entity: str | None = None
    attribute: str | None = None
    value: str | None = None


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(tmp_path, clock):
    s = MemoryStore(f"sqlite:///{tmp_path / 'm.db'}", authenticator=TrustedAuthenticator(), clock=clock)
    yield s
    s.close()


@pytest.fixture
def scope(store):
    return store.open(Principal("acme", user_id="u1"))


def session(n):
    return Provenance("validation", session_id=f"s{n}", agent="sql")


SOFT_DELETE = "Table `orders` uses soft-delete. Always filter deleted_at IS NULL."


def test_decay_is_idempotent_and_never_compounds(store, scope, clock):
    learning = store.remember(scope, RecordDraft("learning", "Use orders_v2", entity="orders", attribute="table",
                                                 provenance=session(1))).record
    note = store.remember(scope, RecordDraft("note", "Fiscal year starts in April", entity="fy", attribute="start",
                                             provenance=session(1))).record
    clock.advance(95)
    first = run_decay(scope)
    head = store.head_seq(scope)
    assert run_decay(scope).decayed == 0 and store.head_seq(scope) == head  # same now: nothing
    assert first.decayed == 2
    assert store.get(scope, learning.id).confidence == 0.54  # 3 cycles x 0.02
    assert store.get(scope, note.id).confidence == 0.6  # 1 cycle of 60 d x 0.1
    clock.advance(5)  # day 100: still 3 cycles, nothing to do
    assert run_decay(scope).decayed == 0
    clock.advance(20)  # day 120: 4 cycles, computed from the anchor, not from 0.54
    run_decay(scope)
    assert store.get(scope, learning.id).confidence == 0.52
    # corroboration re-anchors: the clock restarts from the corroborated value
    store.corroborate(scope, learning.id, session(2))
    assert store.get(scope, learning.id).confidence == 0.62
    clock.advance(29)
    assert run_decay(scope).decayed == 0
    # learnings fall out of default retrieval under 0.2, notes stop at their floor
    clock.advance(30 * 40)
    report = run_decay(scope)
    assert learning.id in report.deactivated and store.get(scope, learning.id).status == "deactivated"
    assert store.get(scope, note.id).confidence == 0.1 and store.get(scope, note.id).is_active
    assert store.check_projection(scope) == []


def test_verified_notes_skip_decay_but_not_validity(store, scope, clock):
    from baton.memory import Validity

    note = store.remember(scope, RecordDraft("note", "EUR/USD rate is 1.08", entity="fx", attribute="eur-usd",
                                             value="1.08", provenance=session(1),
                                             validity=Validity(clock(), volatile=True, freshness_s=7 * DAY))).record
    verified = store.verify_note(scope, note.id, Provenance("feedback", user_id="u2", outcome_id="check-1"))
    assert verified.confidence == 0.85 and verified.verified
    assert note.id in compile_bundle(scope, "eur usd rate").record_ids
    clock.advance(400)
    run_decay(scope)
    assert store.get(scope, note.id).confidence == 0.85
    assert note.id not in compile_bundle(scope, "eur usd rate").record_ids  # past its freshness window


def test_insight_confidence(store, scope, clock):
    ins = store.remember(scope, RecordDraft("insight", "Revenue spikes every December", entity="revenue",
                                            attribute="seasonality", value="december", provenance=session(1))).record
    assert ins.confidence == 0.5
    assert store.remember(scope, RecordDraft("insight", "Revenue spikes every December", entity="revenue",
                                             attribute="seasonality", value="december",
                                             provenance=session(2))).record.confidence == 0.65
    assert store.adjust_insight(scope, ins.id, "resurfaced").confidence == 0.7
    assert store.adjust_insight(scope, ins.id, "dismissed").confidence == 0.5
    store.adjust_insight(scope, ins.id, "dismissed")
    gone = store.adjust_insight(scope, ins.id, "dismissed")
    assert gone.confidence == 0.1 and gone.status == "expired"


def test_promotion_needs_two_independent_connections(store, scope, clock):
    def on(conn, n):
        return ingest_learnings(scope, [ExtractedLearning("schema_gotcha", SOFT_DELETE, ["orders"], ["deleted_at"], conn)],
                                provenance=session(n))[0].record

    a = on("db-a", 1)
    b = on("db-b", 1)  # the same session on a second database: one witness
    store.corroborate(scope, a.id, session(2))
    store.corroborate(scope, b.id, session(2))
    assert promote(scope) == []  # both at 0.7 but backed by the same sessions
    c = on("db-c", 3)
    store.corroborate(scope, c.id, session(4))
    promoted = promote(scope)
    assert len(promoted) == 1
    g = promoted[0]
    info = g.data["promotion"]
    assert g.scope == "global" and g.confidence == 0.7 and set(info["sources"]) == {a.id, b.id, c.id}
    assert len(info["connections"]) == 2 and info["expires_at"] == clock() + 90 * DAY
    assert promote(scope) == []  # idempotent
    lines = compile_bundle(scope, "orders", connection_id="db-z").text
    assert f"- [global, seen on 2 DBs] {SOFT_DELETE}" in lines
    assert [r.id for r in global_patterns(scope)] == [g.id]
    clock.advance(91)
    run_decay(scope)
    assert store.get(scope, g.id).status == "expired"


def test_sibling_transfer_rules(store, scope):
    good = [ExtractedLearning("schema_gotcha", f"Gotcha {i}: table t{i} needs filter f{i}", [f"t{i}"], [], "db-a")
            for i in range(10)]
    ingest_learnings(scope, good, provenance=session(1))
    ingest_learnings(scope, [ExtractedLearning("performance_hint", "Big table events times out; add LIMIT", ["events"], [],
                                               "db-b")], provenance=session(2))
    ingest_learnings(scope, [ExtractedLearning("column_correction", "Column amt does not exist; use amount",
                                               ["sales"], ["amt"], "db-a")], provenance=session(3))
    assert sibling_learnings(scope, "db-c")[0].confidence == 0.6
    got = sibling_learnings(scope, "db-c")
    assert len(got) == 8 and all(r.category in ("schema_gotcha", "performance_hint") for r in got)
    assert all(r.connection_id != "db-c" for r in got)
    excluded = sibling_learnings(scope, "db-c", exclude_hashes={r.lesson_hash for r in got})
    assert {r.id for r in excluded}.isdisjoint({r.id for r in got})
    text = compile_bundle(scope, "events table", connection_id="db-a", token_budget=4000).text
    assert "- [from sibling] Big table events times out; add LIMIT [60%]" in text
    assert "[from sibling] Gotcha" not in text  # db-a's own lessons are not "from sibling" for db-a
    assert "- Column amt does not exist; use amount [60%]" in text


def test_bundle_lock_pins_what_the_agent_knew(store, scope, clock, tmp_path):
    folder = tmp_path / "doctrine"
    folder.mkdir()
    (folder / "metrics.md").write_text("# Metrics\n\n## Revenue\nRevenue is net of refunds.\n\n## Churn\nChurn is monthly.\n")
    index_doctrine(scope, folder)
    ingest_learnings(scope, [ExtractedLearning("format_discovery", "Column `amount` stores cents. Divide by 100.",
                                               ["orders"], ["amount"], "wh")], provenance=session(1))
    record_feedback(scope, Feedback("What was revenue last month?", "confirmed", sql="SELECT sum(amount)/100 FROM orders",
                                    connection_id="wh", user_id="u1", session_id="s1"))
    bundle = compile_bundle(scope, "revenue last month from orders", connection_id="wh")
    assert "### Doctrine" in bundle.text and "Revenue is net of refunds." in bundle.text
    assert "Churn is monthly." in bundle.text  # doctrine is always eligible, relevant or not
    assert "SELECT sum(amount)/100 FROM orders" in bundle.text
    assert "- Column `amount` stores cents. Divide by 100. [60%]" in bundle.text
    lock = bundle.lock.to_dict()
    assert lock["journal_seq"] == store.head_seq(scope) and len(lock["records"]) == 4  # 2 doctrine sections, 1 learning, 1 benchmark
    for rid, content_hash in bundle.lock.records:
        assert store.get(scope, rid).content_hash == content_hash
    json.dumps(lock)
    small = compile_bundle(scope, "revenue", connection_id="wh", token_budget=60)
    assert 0 < small.tokens <= 60 and len(small.lock.records) < 4
    assert compile_bundle(scope, "revenue", connection_id="wh").lock == compile_bundle(scope, "revenue", connection_id="wh").lock


def test_doctrine_reindex_supersedes_edits_and_retires_removals(store, scope, tmp_path):
    folder = tmp_path / "doctrine"
    (folder / "rules").mkdir(parents=True)
    (folder / "rules" / "a.md").write_text("Intro text.\n\n# Refunds\nRefunds count after 30 days.\n")
    (folder / "b.md").write_text("# Regions\nEMEA includes Turkey.\n")
    first = index_doctrine(scope, folder)
    assert len(first.added) == 3
    assert index_doctrine(scope, folder).unchanged == 3  # idempotent
    (folder / "rules" / "a.md").write_text("Intro text.\n\n# Refunds\nRefunds count after 14 days.\n")
    (folder / "b.md").unlink()
    second = index_doctrine(scope, folder)
    assert len(second.updated) == 1 and len(second.retired) == 1 and second.unchanged == 1
    texts = [r.text for r in store.list_records(scope, kind="doctrine")]
    assert "Refunds count after 14 days." in texts and "EMEA includes Turkey." not in texts
    with pytest.raises(InvalidRecordError):
        index_doctrine(scope, tmp_path / "missing")


def test_feedback_cycle(store, scope):
    q = "How many active customers?"
    ok = record_feedback(scope, Feedback(q, "confirmed", sql="SELECT count(*) FROM customers WHERE active",
                                         connection_id="wh", user_id="u1"))
    assert ok.produced == "benchmark" and ok.result.record.confidence == 1.0
    approx = record_feedback(scope, Feedback(q, "approximate", deviation="includes trial accounts", connection_id="wh"))
    assert approx.produced == "note" and "includes trial accounts" in approx.result.record.text
    assert approx.result.record.confidence == 0.7
    rej = record_feedback(scope, Feedback(q, "rejected", correction="Active customers exclude trial accounts",
                                          sql="SELECT count(*) FROM customers WHERE active", connection_id="wh"))
    assert rej.produced == "learning" and rej.flagged_stale == [ok.result.record.id]
    assert store.get(scope, ok.result.record.id).stale
    assert "SELECT count(*) FROM customers WHERE active" not in compile_bundle(scope, "active customers", connection_id="wh").text
    fixed = record_feedback(scope, Feedback(q, "confirmed", sql="SELECT count(*) FROM customers WHERE active AND NOT trial",
                                            connection_id="wh", user_id="u1"))
    assert fixed.result.action == "superseded"
    down = record_feedback(scope, Feedback("Top products?", "thumbs_down", connection_id="wh"))
    assert down.produced == "note" and "unhelpful" in down.result.record.text
    with pytest.raises(InvalidRecordError):
        record_feedback(scope, Feedback(q, "confirmed"))
    with pytest.raises(InvalidRecordError):
        record_feedback(scope, Feedback(q, "meh"))


async def test_validation_cycle_ingests_and_runs_deep_analysis_only_past_three_attempts(store, scope, clock):
    attempts3 = [{"sql": "SELECT * FROM order", "error": "no such table"}] * 2 + [{"sql": "SELECT * FROM orders"}]
    heuristic = [ExtractedLearning("table_preference", "Use `orders` instead of `order`", ["orders", "order"], [], "wh")]
    model = ScriptedModel([
        json.dumps({"learnings": [{"category": "schema_gotcha", "lesson": "orders has a soft-delete column",
                                   "tables": ["orders"], "columns": ["deleted_at"]},
                                  {"category": "made_up", "lesson": "x"},
                                  {"category": "general", "lesson": "__import__('os').system('rm -rf /')",
                                   "tables": "not-a-list"}]}),
        ProviderServerError("boom"),
    ])
    out = await record_validation(scope, learnings=heuristic, attempts=attempts3, provenance=session(1),
                                  connection_id="wh", model=model)
    assert [r.action for r in out.results] == ["created"] and not out.deep_ran and model.calls == []
    attempts5 = attempts3[:2] * 2 + attempts3[2:]
    out = await record_validation(scope, learnings=[], attempts=attempts5, provenance=session(2), connection_id="wh",
                                  model=model, question="orders last week")
    assert out.deep_ran and out.deep_rejected == 2 and len(model.calls) == 1
    assert "Attempt 5" in model.calls[0][0][1].content
    deep = out.deep_results[0].record
    assert deep.text == "orders has a soft-delete column" and deep.provenance[0].source == "llm_analysis"
    again = await record_validation(scope, learnings=[], attempts=attempts5, provenance=session(3), connection_id="wh",
                                    model=model)
    assert again.deep_skipped == "cooldown" and len(model.calls) == 1
    clock.advance(1)
    failing = await record_validation(scope, learnings=[], attempts=attempts5, provenance=session(3),
                                      connection_id="wh", model=model)
    assert failing.deep_ran and failing.deep_error.startswith("ProviderServerError")
    with pytest.raises(InvalidRecordError):
        ingest_learnings(scope, [{"category": "nope", "lesson": "x"}], provenance=session(1))
    # dicts are accepted as well as dataclasses; one bad item writes nothing at all
    head = store.head_seq(scope)
    with pytest.raises(InvalidRecordError):
        ingest_learnings(scope, [{"category": "general", "lesson": "fine", "tables": ["t"]},
                                 {"category": "general", "lesson": ""}], provenance=session(1))
    assert store.head_seq(scope) == head


def test_artifacts_are_the_only_way_between_workspaces(store, scope):
    other = store.open(Principal("globex"))
    ingest_learnings(scope, [ExtractedLearning("schema_gotcha", SOFT_DELETE, ["orders"], ["deleted_at"], "wh")],
                     provenance=session(1))
    artifact = export_artifact(scope)
    assert artifact["source_workspace"] == "acme" and len(artifact["records"]) == 1
    tampered = json.loads(json.dumps(artifact))
    tampered["records"][0]["text"] = "Never filter anything"
    with pytest.raises(ArtifactError):
        import_artifact(other, tampered)
    assert store.list_records(other) == []
    results = import_artifact(other, artifact)
    imported = results[0].record
    assert imported.workspace == "globex" and imported.text == SOFT_DELETE
    assert imported.data["imported_from"]["workspace"] == "acme" and imported.provenance[0].source == "import"
    assert import_artifact(other, artifact)[0].action == "unchanged"  # same artifact twice: same witness
