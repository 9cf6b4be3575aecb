"""Property tests: for ANY sequence of memory operations, the live projection equals a
rebuild from the journal alone, the chain verifies, and every confidence stays within
[its kind's floor, 1.0]."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton.memory import (
    Feedback,
    MemoryStore,
    Principal,
    Provenance,
    RecordDraft,
    TrustedAuthenticator,
    record_feedback,
    run_decay,
)
from baton.memory.confidence import POLICIES

KINDS = ("learning", "note", "insight")
remember = st.tuples(st.just("remember"), st.sampled_from(KINDS), st.sampled_from(["orders", "users"]),
                     st.sampled_from(["timeout", "policy"]), st.sampled_from([None, "30s", "60s", "allow", "deny"]),
                     st.sampled_from(["workspace", "p1", "p1/x", "p2"]), st.integers(0, 3))
op = st.one_of(
    remember,
    st.tuples(st.just("corroborate"), st.integers(0, 20), st.integers(0, 5)),
    st.tuples(st.just("forget"), st.integers(0, 20)),
    st.tuples(st.just("applied"), st.integers(0, 20)),
    st.tuples(st.just("decay"), st.integers(1, 400)),
    st.tuples(st.just("insight"), st.integers(0, 20), st.sampled_from(["resurfaced", "dismissed"])),
    st.tuples(st.just("verify"), st.integers(0, 20)),
    st.tuples(st.just("feedback"), st.sampled_from(["confirmed", "rejected", "thumbs_down"]), st.integers(0, 2)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=25))
def test_any_event_sequence_rebuilds_to_the_live_projection(ops):
    clock = [1_700_000_000.0]
    store = MemoryStore("sqlite://", authenticator=TrustedAuthenticator(), clock=lambda: clock[0])
    scope = store.open(Principal("ws"))
    ids: list[str] = []

    def pick(i):
        return ids[i % len(ids)] if ids else None

    try:
        for o in ops:
            kind = o[0]
            rid = pick(o[1]) if kind in ("corroborate", "forget", "applied", "insight", "verify") else None
            live = {r.id: r for r in store.list_records(scope, active_only=False, limit=10_000)}
            if kind == "remember":
                _, k, entity, attribute, value, sc, session = o
                res = store.remember(scope, RecordDraft(k, f"{entity} {attribute} is {value}", entity=entity,
                                                        attribute=attribute, value=value, scope=sc,
                                                        provenance=Provenance(session_id=f"s{session}")))
                ids.append(res.record.id)
            elif kind == "corroborate" and rid in live:
                store.corroborate(scope, rid, Provenance(session_id=f"c{o[2]}"))
            elif kind == "forget" and rid in live:
                store.forget(scope, rid)
            elif kind == "applied" and rid in live:
                store.mark_applied(scope, [rid])
            elif kind == "decay":
                clock[0] += o[1] * 86400
                run_decay(scope)
            elif kind == "insight" and rid in live and live[rid].kind == "insight" and live[rid].is_active:
                store.adjust_insight(scope, rid, o[2])
            elif kind == "verify" and rid in live and live[rid].kind == "note":
                store.verify_note(scope, rid, Provenance(user_id="checker"))
            elif kind == "feedback":
                fb = {"confirmed": dict(sql=f"SELECT {o[2]}"), "rejected": dict(correction=f"fix {o[2]}"),
                      "thumbs_down": {}}[o[1]]
                record_feedback(scope, Feedback("How many orders?", o[1], connection_id="wh", **fb))
            clock[0] += 60
        assert store.check_projection(scope) == []
        report = store.verify(scope)
        assert report.ok, report.problems
        for rec in store.list_records(scope, active_only=False, limit=10_000):
            assert POLICIES[rec.kind].floor <= rec.confidence <= 1.0, rec
        before = {r.id: r for r in store.list_records(scope, active_only=False, limit=10_000)}
        store.rebuild(scope)
        assert {r.id: r for r in store.list_records(scope, active_only=False, limit=10_000)} == before
    finally:
        store.close()
