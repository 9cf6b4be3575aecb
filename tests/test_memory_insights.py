"""Insights through the bridge: lookup and create/resurface are one write transaction, so
concurrent requests storing the same insight make one record, resurfaced once per extra
request (real SQLite file, real threads)."""

from __future__ import annotations

import threading

import pytest

from baton.memory import InvalidRecordError, MemoryStore, Principal, RecordDraft, TrustedAuthenticator
from baton.memory import confidence as conf
from baton.memory.bridge import INSIGHT_ENTITY, dismiss_insight, remember_insights


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}", authenticator=TrustedAuthenticator())
    yield s
    s.close()


def insight(key: str) -> dict:
    return {"id": key, "kind": "trend", "text": f"Revenue of {key} spikes every December", "value": "+40%",
            "evidence_rows": [[1, 2]]}


def test_same_insight_from_two_threads_is_one_record_resurfaced_once(store):
    scope = store.open(Principal("acme"))
    initial = conf.policy_for("insight").initial
    for round_ in range(8):  # several rounds: each one a fresh race between the two requests
        key = f"region-{round_}"
        barrier = threading.Barrier(2)
        ids: list[list[str]] = []
        errors: list[BaseException] = []

        def request(session: str) -> None:
            try:
                barrier.wait()
                ids.append(remember_insights(store, scope, [insight(key)], session_id=session))
            except BaseException as exc:  # surfaced below, not lost in the thread
                errors.append(exc)

        threads = [threading.Thread(target=request, args=(f"s{round_}-{n}",)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        records = store.about(scope, "insight", INSIGHT_ENTITY + key)
        assert len(records) == 1, f"round {round_}: {len(records)} records for one insight"
        assert ids[0] == ids[1] == [records[0].id]
        assert records[0].confidence == pytest.approx(conf.resurfaced(initial))
        assert [e.type for e in store.history(scope, records[0].id)] == ["record.created", "record.adjusted"]


def test_remember_insight_resurfaces_and_dismisses(store):
    scope = store.open(Principal("acme"))
    first = remember_insights(store, scope, [insight("emea"), insight("apac")])
    again = remember_insights(store, scope, [insight("apac")])
    assert again == first[1:]
    assert store.get(scope, first[1]).confidence > store.get(scope, first[0]).confidence
    assert dismiss_insight(store, scope, "apac") and not dismiss_insight(store, scope, "nowhere")
    assert "evidence_rows" not in store.get(scope, first[0]).data["insight"]
    with pytest.raises(InvalidRecordError):
        store.remember_insight(scope, RecordDraft("learning", "not an insight", entity="x", attribute="y"))
