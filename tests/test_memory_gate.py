"""The pure rules: similarity, the gate, verdicts, value normalization, confidence tables."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from baton.memory import Provenance, Verdict
from baton.memory import confidence as conf
from baton.memory.dedup import find_candidates, similarity
from baton.memory.gate import apply_verdict, contradiction_gate, independent, keyword_flags, scopes_overlap
from baton.memory.model import normalize_value

ALWAYS = "Always allow external sharing of customer data"
NEVER = "Never allow external sharing of customer data"


def stmt(entity, attribute, value=None, scope="workspace", text=""):
    return SimpleNamespace(entity=entity, attribute=attribute, value=value, scope=scope, text=text)


def test_seed_counterexample_always_never_scores_0_8791_and_is_a_contradiction():
    assert similarity(ALWAYS, NEVER) == pytest.approx(0.8791, abs=5e-5)
    old = stmt("customer-data-sharing", "external-sharing-policy", "always", text=ALWAYS)
    new = stmt("customer-data-sharing", "external-sharing-policy", "never", text=NEVER)
    found = find_candidates([old], NEVER)  # similarity proposes...
    assert [c.record for c in found] == [old]
    verdict = contradiction_gate(old, new)  # ...the gate disposes
    assert verdict is Verdict.CONTRADICTS
    old.id, old.provenance = "old", [Provenance(session_id="s1")]
    assert apply_verdict(verdict, old, Provenance(session_id="s2")).kind == "supersede"


def test_seed_counterexample_use_python_vs_production_credentials_is_unrelated():
    a, b = "Use Python", "Never use production credentials"
    assert "negation-flip" in keyword_flags(a, b)  # the heuristic flags...
    verdict = contradiction_gate(stmt("language", "preferred", "python"), stmt("production-credentials", "usage", "deny"))
    assert verdict is Verdict.UNRELATED  # ...and decides nothing
    assert find_candidates([stmt("language", "preferred", text=a)], b) == []


def test_unit_change_is_a_contradiction_the_negation_heuristic_cannot_see():
    old = stmt("query-timeout", "value", "30s", text="timeout is 30s")
    new = stmt("query-timeout", "value", "60s", text="timeout is 60s")
    assert "negation-flip" not in keyword_flags(old.text, new.text)
    assert contradiction_gate(old, new) is Verdict.CONTRADICTS
    same = stmt("query-timeout", "value", "30 seconds")
    assert contradiction_gate(old, same) is Verdict.CORROBORATES
    assert contradiction_gate(old, stmt("query-timeout", "value", "0.5 min")) is Verdict.CORROBORATES


@pytest.mark.parametrize("raw, expected", [
    ("30s", "30 s"), ("30 sec", "30 s"), ("1 min", "60 s"), ("1500ms", "1.5 s"), ("Always", "allow"),
    ("never", "deny"), ("Forbidden.", "deny"), ("1,000", "1000"), (True, "true"), (3.0, "3"), ("  USD  ", "usd"),
    (None, None), ("", None),
])
def test_value_normalization(raw, expected):
    assert normalize_value(raw) == expected


def test_scopes_coexist_unless_the_new_scope_covers_the_old():
    assert scopes_overlap("project-a", "project-a")
    assert scopes_overlap("project-a/reports", "project-a")  # broader correction covers narrower
    assert not scopes_overlap("project-a", "project-a/reports")  # narrower wins only locally
    assert not scopes_overlap("project-a", "project-b")
    verdict = contradiction_gate(stmt("fy", "start", "april", "project-a"), stmt("fy", "start", "january", "project-b"))
    assert verdict is Verdict.COEXIST
    assert apply_verdict(verdict, SimpleNamespace(id="x", provenance=[]), Provenance()).kind == "create"


def test_independence_is_a_different_session_agent_outcome_or_user():
    prior = [Provenance("validation", session_id="s1", agent="sql")]
    assert not independent(prior, Provenance("llm_analysis", session_id="s1", agent="sql"))  # same witness
    assert independent(prior, Provenance(session_id="s2", agent="sql"))
    assert independent(prior, Provenance(session_id="s1", agent="planner"))
    assert independent(prior, Provenance(session_id="s1", agent="sql", outcome_id="exec-9"))
    old = SimpleNamespace(id="a", provenance=prior)
    assert apply_verdict(Verdict.CORROBORATES, old, Provenance(session_id="s1", agent="sql")).kind == "unchanged"
    assert apply_verdict(Verdict.CORROBORATES, old, Provenance(session_id="s2")).kind == "corroborate"


def test_find_candidates_thresholds_and_has_no_side_effects():
    rec = stmt("e", "a", text="Column amount stores cents. Divide by 100.")
    before = dict(vars(rec))
    near = "Column amount stores cents; divide it by 100."
    assert similarity(rec.text, near) >= 0.80
    assert find_candidates([rec], near, kind="learning")
    far = "The orders table has a soft delete column"
    assert find_candidates([rec], far) == []
    # the same record reaches the gate anyway when it shares entity AND attribute
    assert find_candidates([rec], far, entity="e", attribute="a")[0].structural
    assert vars(rec) == before
    ratio = similarity("Revenue grew 10% in March", "Revenue grew 12% in March!")
    assert 0.75 <= ratio
    insight_threshold = conf.policy_for("insight").similarity
    assert insight_threshold == 0.80
    assert (ratio >= 0.80) == bool(find_candidates([stmt("x", "y", text="Revenue grew 10% in March")],
                                                   "Revenue grew 12% in March!", kind="insight"))


def test_confidence_tables_match_the_seed():
    assert (conf.LEARNING.initial, conf.NOTE.initial, conf.INSIGHT.initial) == (0.6, 0.7, 0.5)
    assert conf.corroborated("learning", 0.6) == 0.7
    assert conf.corroborated("learning", 0.95) == 1.0
    assert conf.corroborated("insight", 0.5) == 0.65
    assert conf.verified("note", 0.7) == 0.85
    assert conf.resurfaced(0.5) == 0.55 and conf.dismissed(0.5) == 0.3
    day = conf.DAY
    assert conf.decayed("learning", 0.6, 0, 29 * day) == 0.6
    assert conf.decayed("learning", 0.6, 0, 30 * day) == 0.58
    assert conf.decayed("learning", 0.6, 0, 95 * day) == 0.54
    assert conf.decayed("note", 0.7, 0, 130 * day) == 0.5
    assert conf.decayed("note", 0.7, 0, 3000 * day) == 0.1  # floor
    assert conf.decayed("note", 0.85, 0, 3000 * day, is_verified=True) == 0.85  # exempt
    assert conf.decayed("insight", 0.5, 0, 60 * day) == 0.4
    assert conf.status_for("learning", 0.19) == "deactivated" and conf.status_for("learning", 0.2) == "active"
    assert conf.status_for("insight", 0.14) == "expired" and conf.status_for("insight", 0.15) == "active"
    assert conf.status_for("note", 0.1) == "active"
