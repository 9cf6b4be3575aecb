"""A document answer offers the workspace's known questions on the same subject.

A data answer offers follow-ups that rewrite its SQL (``baton.viz.suggest``); a passage from the
documents has no table to rewrite, so it offered nothing, and the conversation stopped there.
It now offers up to three questions this workspace is known to answer — its verified
questions and the questions its documents answer (``baton.workspace.examples``, the page's
own examples) — that share a content word with the question asked ("What is a roadshow?" ->
"How many tickets did each roadshow city sell?"), the closest first. Each offered question is
one the workspace answers without a model, so an offer is never refused.

Decisions: only an answer from the documents alone is given these (an answer with rows has
its own follow-ups; a refusal has its "Did you mean"). The question itself is never offered.
With nothing on the same subject, nothing is offered (no unrelated questions).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from baton.agents.lexical_routing import similarity, words

if TYPE_CHECKING:
    from baton.response import AIMessage
    from baton.workspace.core import Workspace

OFFERED = 3
log = logging.getLogger(__name__)


def may_offer(ws: Workspace, message: AIMessage) -> bool:
    """Whether ``message`` is a document answer that ``offer_related`` may fill: checked on
    the event loop (no file is read), so that every other answer skips the thread hop that
    reading the document folder needs — a thread woken for nothing costs a question at
    concurrency 1 a sizeable share of its CPU (``bench/question_cpu.py``)."""
    try:
        return _is_document_answer(ws, message)
    except Exception:  # offer_related logs it, on its thread
        return True


def offer_related(ws: Workspace, message: AIMessage) -> None:
    """Fill a document answer's ``suggested_followups`` (module docstring). Never fails the
    answer: an offer that cannot be made is not made."""
    try:
        _offer(ws, message)
    except Exception:
        log.warning("offering related questions failed", exc_info=True)


def _is_document_answer(ws: Workspace, message: AIMessage) -> bool:
    if message.results is not None or message.error or message.suggested_followups or not message.input:
        return False
    consulted = set(message.metadata.get("agents_consulted") or ())
    return bool(consulted) and consulted <= ws.catalog.document_names()


def _offer(ws: Workspace, message: AIMessage) -> None:
    from baton.workspace.examples import example_questions

    question = message.input
    if not question or not _is_document_answer(ws, message):
        return
    known = example_questions(ws)
    candidates = [str(v["question"]) for v in known.get("verified") or ()] + [str(q) for q in known.get("documents") or ()]
    asked = words(question)
    own = question.strip().lower()
    scored = sorted(((similarity(asked, words(q)), -i, q) for i, q in enumerate(dict.fromkeys(candidates))
                     if q.strip().lower() != own), reverse=True)
    message.suggested_followups = [q for score, _, q in scored if score > 0][:OFFERED]


__all__ = ["may_offer", "offer_related"]
