"""A workspace's verified questions: stored in memory, installed where they are used.

A verified question is a golden question -> SQL pair a person checked. It lives in the
workspace's memory as a ``benchmark`` record (entity ``question``, attribute the question's
key, ``data`` = question, SQL, specialist, slots, provenance), and is used:

- for matching: the orchestrator's and the SQL specialists' fast path (``baton.verified``),
  and the no-model router's "Did you mean ...?" (``LexicalRouter.verified``);
- as few-shot examples: the SQL specialists' per-task memory bundle reads benchmarks;
- by ``baton eval``: ``baton.evaluation.verified_questions`` reads the same records.

``install_verified`` puts the current set in place (at open, and after each change);
``save_verified_question`` checks and stores one (the "Save as verified question" action and
``baton verified add``); ``remove_verified_question`` retires one; ``annotate_answer`` is the
answer path's hook (the "Did you mean" suggestions, usage counts, ``llm_calls``).

Decisions (the issue was silent):

- The SQL is checked before it is stored: it must pass the safety check and run through the
  specialist's read-only engine (one run), and every declared slot must bind. A failure is
  ``VerifiedQuestionError`` and nothing is stored.
- Saving a question that is already verified with other SQL replaces it (the memory's gate
  supersedes the old record; its history keeps both). Removing retires the record; a
  built-in verified question (the demo's) stays removed across restarts.
- Benchmarks that ``confirmed`` feedback creates join the set at the workspace's next start.
- The "Did you mean" suggestions go to ``suggested_followups`` (the page shows them as
  clickable chips, the CLI as a list) and to ``metadata["did_you_mean"]`` with scores.
- ``metadata["llm_calls"]`` is 0 on every answer of a workspace with no model: routing
  stand-ins (the lexical router, the verified route) are not LLM calls.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from baton.agents.lexical_routing import LexicalRouter
from baton.errors import BatonError
from baton.phrasing import Vocabulary
from baton.verified import Slot, SlotError, VerifiedQuestion, closest_verified, match_verified
from baton.workspace.advisory import count_use

if TYPE_CHECKING:
    from baton.response import AIMessage
    from baton.workspace.core import Workspace

log = logging.getLogger(__name__)
SUGGESTIONS = 3


class VerifiedQuestionError(BatonError):
    """A verified question that cannot be saved (unsafe or failing SQL, a slot that does not
    bind, no specialist to own it, no memory to keep it)."""


def _key(question: str) -> str:
    from baton.memory.feedback import question_key

    return question_key(question)


def _from_record(record: Any) -> VerifiedQuestion | None:
    data = record.data or {}
    question = str(data.get("question") or record.text or "").strip()
    sql = str(data.get("sql") or record.value or "").strip()
    if not question or not sql:
        return None
    try:
        slots = tuple(Slot.from_dict(s) for s in data.get("slots") or ())
    except (SlotError, KeyError, TypeError):
        slots = ()
    source = record.provenance[0].source if record.provenance else ""
    return VerifiedQuestion(question, sql, str(data.get("agent") or ""), record.connection_id or "", slots,
                            source=source, record_id=record.id)


def _records(ws: Workspace, *, active_only: bool) -> list[Any]:
    if ws.memory is None:
        return []
    records: list[Any] = ws.memory.list_records(ws.memory_scope(), kind="benchmark", active_only=active_only, limit=100_000)
    return records


def current_verified(ws: Workspace, builtins: Sequence[VerifiedQuestion] = ()) -> list[VerifiedQuestion]:
    """The built-in verified questions not removed, then the stored ones (active, not
    stale), each question once (a stored one with a built-in's key is the built-in, with the
    built-in's slots)."""
    records = _records(ws, active_only=False)
    by_key: dict[str, Any] = {}
    for record in sorted(records, key=lambda r: r.created_at):
        if record.entity == "question":
            if record.is_active or record.attribute not in by_key:
                by_key[record.attribute] = record
    out: list[VerifiedQuestion] = []
    seen: set[str] = set()
    for builtin in builtins:
        key = _key(builtin.question)
        record = by_key.get(key)
        if record is not None and (not record.is_active or record.stale):
            seen.add(key)  # removed (or flagged stale by feedback): not answered from
            continue
        if record is not None:
            stored = _from_record(record)
            if stored is not None and " ".join(stored.sql.split()) != " ".join(builtin.sql.split()):
                continue  # replaced by a saved version: the stored one below wins
            builtin = replace(builtin, record_id=record.id)
        seen.add(key)
        out.append(builtin)
    for key, record in by_key.items():
        if key in seen or not record.is_active or record.stale:
            continue
        stored = _from_record(record)
        if stored is not None:
            out.append(stored)
    return out


def installed(ws: Workspace) -> tuple[VerifiedQuestion, ...]:
    """The workspace's verified questions (its catalog's one set)."""
    return ws.catalog.verified.questions


def sql_agents(ws: Workspace) -> list[Any]:
    """The workspace's SQL specialists (``RunsSQL``: a connection and verified questions)."""
    return list(ws.catalog.sql_specialists())


def install_verified(ws: Workspace, verified: Iterable[VerifiedQuestion], vocabulary: Vocabulary | None = None) -> tuple[VerifiedQuestion, ...]:
    """Make ``verified`` the workspace's one set (``Catalog.set_verified``), read by the
    orchestrator's fast path, each SQL specialist (its own questions; every question without
    an owner goes to the only one, when there is one) and the no-model router. Each gets
    ``vocabulary`` (else keeps its own)."""
    agents = ws.catalog.sql_specialists()
    only = agents[0].name if len(agents) == 1 else None
    final = []
    for v in verified:
        if vocabulary is not None:
            v = replace(v, vocabulary=vocabulary)
        if not v.agent and only:
            v = replace(v, agent=only)
        final.append(v)
    return ws.catalog.set_verified(final, vocabulary)  # one assignment: a running request keeps the tuple it read


def docs_vocabulary(folder: Any = None) -> Vocabulary:
    """The built-in vocabulary plus the "Also called" synonyms of a folder's Markdown
    documents (``Vocabulary.from_markdown``)."""
    from pathlib import Path

    from baton.phrasing import DEFAULT_VOCABULARY

    if folder is None or not Path(folder).is_dir():
        return DEFAULT_VOCABULARY
    texts = []
    for path in sorted(Path(folder).rglob("*.md"))[:500]:
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace")[:1_000_000])
        except OSError:
            continue
    return DEFAULT_VOCABULARY.merged(Vocabulary.from_markdown(texts))


def _vocabulary(ws: Workspace) -> Vocabulary | None:
    return next((v.vocabulary for v in installed(ws) if v.vocabulary is not None), ws.catalog.vocabulary)


def _owner(ws: Workspace, agent: str | None, answer: AIMessage | None) -> Any:
    agents = sql_agents(ws)
    wanted = agent or (answer.meta.get("routed_to") or answer.meta.get("agent") if answer is not None else None)
    if wanted:
        found = next((a for a in agents if a.name == wanted), None)
        if found is None:  # an answer of the semantic layer: the SQL specialist on its connection keeps it
            answered = ws.catalog.specialist(wanted)
            layer = answered.semantic_layer if answered is not None else None
            if layer is None and answer is not None and answer.meta.get("semantic_query"):
                layer = ws.catalog.semantic  # the workspace's model, however its agent is wired now
            found = _closest(ws, [a for a in agents if layer is not None and a.connection is getattr(layer, "connection", None)],
                             answer)
        if found is None:
            raise VerifiedQuestionError(f"no SQL specialist named {wanted!r} in workspace {ws.name!r} "
                                        f"(has: {', '.join(a.name for a in agents) or 'none'})")
        return found
    if len(agents) == 1:
        return agents[0]
    raise VerifiedQuestionError(f"say which specialist answers it: one of {', '.join(a.name for a in agents) or 'none'}")


def _closest(ws: Workspace, agents: list[Any], answer: AIMessage | None) -> Any:
    """Of the SQL specialists on one connection, the one the answer's question is about (an
    Epson question to the Epson specialist, never the first one listed): the no-model
    router's score (its description, its examples), with or without a model configured;
    the first on a tie."""
    said = (answer.input, answer.meta.get("title"), answer.query_explanation) if answer is not None else ()
    question = " ".join(str(part) for part in said if part)  # a follow-up's own words say little ("top 3")
    if len(agents) < 2 or not question:
        return agents[0] if agents else None
    router = ws.orchestrator.model
    if not isinstance(router, LexicalRouter):
        router = LexicalRouter({a.name: [v.checked_question for v in getattr(a, "verified", ())] for a in agents})
    tools = {s.name: s.spec for s in ws.catalog.specialists()}
    scored = [(router.score(question, tools[a.name]), -i, a) for i, a in enumerate(agents) if a.name in tools]
    return max(scored, key=lambda s: s[:2])[2] if scored else agents[0]


async def check_verified(agent: Any, verified: VerifiedQuestion) -> None:
    """``VerifiedQuestionError`` unless the SQL is safe, runs on ``agent``'s connection and
    every slot binds; a choice slot's SQL is checked and run once per choice (a choice is a
    literal the SQL will run with, so each is checked like the SQL itself)."""
    from baton.specialists.sql.validation import validate_and_run
    from baton.verified import check_slots
    from baton.verified.sql import bind_choice

    try:
        check_slots(verified)
        runs = [("", verified.sql)] + [
            (f" with {slot.name} = {word}", bind_choice(verified.sql, slot, word))
            for slot in verified.slots if slot.kind == "choice" for word, _ in slot.choices if word != slot.default]
    except SlotError as exc:
        raise VerifiedQuestionError(str(exc)) from None
    connection = agent.connection
    schema = await connection.schema()
    for bound, sql in runs:
        report = await validate_and_run(sql, number=1, connection=connection, schema=schema,
                                        explanation="checking a verified question")
        if report.unsafe is not None:
            raise VerifiedQuestionError(f"unsafe SQL refused{bound}: {report.unsafe.reason}")
        if report.result is None:
            raise VerifiedQuestionError(f"the SQL does not run{bound}: {report.attempt.error}")


async def save_verified_question(ws: Workspace, question: str, sql: str | None = None, *, answer: AIMessage | None = None,
                                 agent: str | None = None, slots: Sequence[Slot] = (), source: str = "operator",
                                 user_id: str | None = None, session_id: str | None = None) -> VerifiedQuestion:
    """Check and store ``question`` -> ``sql`` (or ``answer``'s question and SQL: "Save as
    verified question" on an answer), then install it: the next question asking the same
    thing is answered from it, with no model."""
    from baton.memory import Provenance, RecordDraft

    question = " ".join((question or (answer.input if answer is not None else "") or "").split())
    sql = (sql or (answer.query if answer is not None else "") or "").strip()
    if not question or not sql:
        raise VerifiedQuestionError("a verified question needs the question and the SQL that answers it")
    if ws.memory is None:
        raise VerifiedQuestionError(f"workspace {ws.name!r} has no memory to keep verified questions in")
    owner = _owner(ws, agent, answer)
    verified = VerifiedQuestion(question, sql, owner.name, owner.connection.id, tuple(slots), source=source,
                                vocabulary=_vocabulary(ws))
    await check_verified(owner, verified)
    draft = RecordDraft(
        "benchmark", question, entity="question", attribute=_key(question), scope=f"connection:{owner.connection.id}",
        value=" ".join(sql.split()), category="benchmark", connection_id=owner.connection.id, verified=True,
        provenance=Provenance(source, agent=owner.name, session_id=session_id, user_id=user_id),
        data={"question": question, "sql": sql, "agent": owner.name, "slots": [s.to_dict() for s in slots],
              "turn_id": answer.turn_id if answer is not None else None},
    )
    result = await asyncio.to_thread(ws.memory.remember, ws.memory_scope(), draft)
    verified = replace(verified, record_id=result.record.id)
    key = _key(question)
    kept = [v for v in installed(ws) if _key(v.checked_question) != key]
    install_verified(ws, [*kept, verified])
    return verified


async def remove_verified_question(ws: Workspace, question: str) -> VerifiedQuestion | None:
    """Retire the verified question ``question`` (its exact wording, or a record id prefix);
    None when there is none. Its history stays in the journal."""
    key = _key(question)
    prefix = question.strip().lower() if re.fullmatch(r"[0-9a-f]{6,32}", question.strip().lower()) else None

    def named(record_id: str) -> bool:
        return bool(prefix and record_id.startswith(prefix))

    found = next((v for v in installed(ws) if _key(v.checked_question) == key or named(v.record_id)), None)
    if ws.memory is None:
        return None
    scope = ws.memory_scope()
    ids = {r.id for r in _records(ws, active_only=True) if r.entity == "question" and (r.attribute == key or named(r.id))}
    if found is not None and found.record_id:
        ids.add(found.record_id)
    if found is None and not ids:
        return None
    if found is None:  # stored but not installed (flagged stale, say): still retired, and named
        found = next((_from_record(r) for r in _records(ws, active_only=True) if r.id in ids), None)
    for record_id in ids:
        await asyncio.to_thread(ws.memory.set_status, scope, record_id, "deactivated", "removed from the verified questions")
    install_verified(ws, [v for v in installed(ws) if v is not found and v.record_id not in ids])
    return found


# --- the answer path's hook -------------------------------------------------------------------


def _could_not_answer(message: AIMessage) -> bool:
    from baton.agents.lexical_routing import is_no_model_answer

    return message.data is None and is_no_model_answer(message)


async def annotate_answer(ws: Workspace, message: AIMessage) -> None:
    """Called on every answer before it is stored: with no model, ``llm_calls`` is 0 and an
    answer that could not be given lists the closest verified questions; a verified
    question's use is counted in memory (``times_applied``); an empty answer with a time
    filter says the data's date range (``data_range``). Never fails the answer."""
    try:
        if ws.no_model:
            message.meta["llm_calls"] = 0
            if _could_not_answer(message) and installed(ws):
                closest = closest_verified(message.input or "", installed(ws), SUGGESTIONS)
                near = [(s, v) for s, v in closest if s > 0] or closest
                message.suggested_followups = [v.checked_question for _, v in near]
                message.meta["did_you_mean"] = [{"question": v.checked_question, "score": s, "agent": v.agent} for s, v in near]
        if message.meta.get("fast_path") == "verified_question" and ws.memory is not None and message.input:
            found = match_verified(message.input, installed(ws))
            if found is not None and found.verified.record_id:
                message.metadata.setdefault("verified_record", found.verified.record_id)
                _count_use(ws, found.verified.record_id)
        from baton.workspace.data_range import note_data_range

        await note_data_range(ws, message)  # an empty answer with a time filter: the dates the data covers
    except Exception:
        log.warning("annotating the answer failed", exc_info=True)


_counting: set[asyncio.Task[None]] = set()  # only holds the tasks until they end (no state between requests)


def _count_use(ws: Workspace, record_id: str) -> None:
    """``times_applied`` +1, as advice: the answer never waits for memory (a slow or dead
    memory store must not hold a verified answer back); a failure is logged."""

    async def count() -> None:
        try:
            await count_use(ws, record_id)  # an advisory write: queued, shed by policy, counted (advisory.py)
        except Exception:
            log.warning("counting a verified question's use failed", exc_info=True)

    task = asyncio.get_running_loop().create_task(count())
    _counting.add(task)
    task.add_done_callback(_counting.discard)


async def settle() -> None:
    """Wait for the use counts still being written (tests, and a clean shutdown)."""
    while _counting:
        await asyncio.gather(*list(_counting), return_exceptions=True)


__all__ = [
    "VerifiedQuestionError", "annotate_answer", "check_verified", "current_verified", "docs_vocabulary", "install_verified",
    "installed",
    "remove_verified_question", "save_verified_question", "settle",
]
