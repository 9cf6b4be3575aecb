"""``may_offer``: which answers go to a thread to be offered related questions. The offer
itself (a document answer gets known questions on its subject) is tested end to end in
``test_followups_always_work.py``; here, that the check on the loop sends every document
answer there and nothing else."""

from __future__ import annotations

from baton.response import AIMessage, QueryResult
from baton.workspace.related import may_offer, offer_related


def _document_answer() -> AIMessage:
    return AIMessage(content="A roadshow is ...", input="What is a roadshow?", metadata={"agents_consulted": ["docs"]})


def test_an_answer_with_rows_an_error_or_offers_already_skips_the_thread():
    rows = AIMessage(content="12 rows", input="Revenue by month", results=QueryResult(["m"], [["2025-01"]]),
                     metadata={"agents_consulted": ["docs"]})
    failed = AIMessage(content="", input="Revenue?", error="no database", metadata={"agents_consulted": ["docs"]})
    offered = AIMessage(content="...", input="Revenue?", suggested_followups=["Break this down by month"],
                        metadata={"agents_consulted": ["docs"]})
    unasked = AIMessage(content="...", metadata={"agents_consulted": ["docs"]})
    nobody = AIMessage(content="...", input="Hello")
    # none of these reads the workspace: no workspace is given
    assert [may_offer(None, m) for m in (rows, failed, offered, unasked, nobody)] == [False] * 5


def test_a_check_that_fails_sends_the_answer_on_rather_than_dropping_its_offer(caplog):
    answer = _document_answer()
    assert may_offer(None, answer) is True  # the workspace cannot be read here
    offer_related(None, answer)  # where the failure is logged, and the answer kept
    assert answer.suggested_followups == [] and "offering related questions failed" in caplog.text
