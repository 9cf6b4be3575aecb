"""``LexicalRouter``: routing without an LLM, for the no-model mode.

It implements the ``ChatModel`` protocol, so the orchestrator runs unchanged: on the user's
question it either calls one tool or answers itself; on a tool result it relays the
specialist's text. (A question that asks the same thing as a verified question never gets
here: the orchestrator routes it straight to its specialist, ``baton.verified``.)

1. **Documents** (``documents``: tool name -> knowledge agent): every question is probed
   against each knowledge index (``document_routing``); when the best passage beats the
   closest verified question ("What is a roadshow?", "How is profit defined?"), that
   knowledge tool is called and answers with the cited passages.
2. **Metrics** (``semantic``: tool name -> a semantic-layer agent, ``baton.semantic``): a
   question its parser claims (it names a metric of the workspace's semantic model, or a
   verb that implies one) goes to that tool, which answers it by compiling a semantic query
   or asks back with the readings it considered. Verified questions keep precedence: the
   orchestrator routes an exact match before this router is asked.
3. **Catalog mode** (``verified`` given, or ``catalog=True``): no other tool can answer
   without a model (a SQL specialist only runs verified SQL), so the router answers itself
   with what this workspace *does* answer without one: the three closest verified questions
   (``closest_verified``), metric questions its semantic model answers (each semantic
   agent's ``examples``, checked to read back) and questions its documents answer
   (``document_questions``, set by the workspace); then the exact command that teaches it
   this question (``baton verified add ... --database URL`` for a workspace over a database,
   its password masked) and how to set a model. The answer starts with ``NO_MODEL_ANSWER``'s
   first sentence; it carries ``error_code: model_not_configured`` (its model response's
   ``finish_reason``, which the orchestrator turns into the answer's code), by which every
   reader recognises it (``is_no_model_answer``), never by its text.
4. Otherwise (specialists that can answer without a model, e.g. table doubles) it calls
   the one tool whose name, description and example questions share the most words with
   the question; when nothing matches well enough it answers that no model is configured.

Scoring in 4 is deliberately simple and explainable: cosine similarity of word sets
(lower-cased, stop words removed, a crude plural strip), the best over the tool's
description and each of its example questions, plus a bonus when a word of the tool's name
appears in the question.
"""

from __future__ import annotations

import itertools
import math
import re
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from collections.abc import Set as AbstractSet

from baton.agents.capabilities import AnswersWithoutModel
from baton.agents.document_routing import documents_win, probe
from baton.llm.base import ChatModel, RoutingStandIn
from baton.messages import LLMResponse, Message, StreamChunk, Tool, ToolCall
from baton.phrasing import DEFAULT_VOCABULARY, Vocabulary
from baton.response import MODEL_NOT_CONFIGURED, AIMessage
from baton.verified import VerifiedQuestion, VerifiedSet, closest_verified, content_words

NO_MODEL_ANSWER = (
    "No language model is configured, so I answer only what this workspace knows without one. "
    "To ask anything else, set BATON_MODEL (for example BATON_MODEL=openai:gpt-4o-mini "
    "with OPENAI_API_KEY, or BATON_MODEL=ollama:llama3.1 for a local Ollama) and restart."
)
NO_MODEL_SENTENCE = NO_MODEL_ANSWER.split(". ")[0] + "."
SET_A_MODEL = NO_MODEL_ANSWER[len(NO_MODEL_SENTENCE):].strip()


def is_no_model_answer(message: AIMessage) -> bool:
    """Whether an answer is the no-model answer (``NO_MODEL_ANSWER`` or a ``did_you_mean``
    list, or a specialist's own ``model_not_configured``): recognised by its code (the
    verified-questions hook, ``baton eval``)."""
    return message.error_code == MODEL_NOT_CONFIGURED


ADD_VERIFIED = 'To teach it one, run: baton verified add "<question>" "<SQL that answers it>"{database} (or save an answer as a verified question).'
_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")
_STOP = frozenset(
    "a an and are as at be by did do does for from how i in is it its me of on or our show "
    "tell that the this to was we were what which who with".split()
)
GENERIC_NAME_WORDS = frozenset({"agent", "specialist", "assistant", "bot", "data"})
_ids = itertools.count(1)


def words(text: str) -> frozenset[str]:
    return content_words(text, _STOP)


def similarity(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


def _relay(model: ChatModel, tool_message: Message) -> LLMResponse:
    """After a tool result, a routing stand-in answers with the specialist's own text."""
    return LLMResponse(content=tool_message.content, model=model.model, provider=model.provider, finish_reason="stop")


async def _examples(agent: AnswersWithoutModel, limit: int) -> list[str]:
    """An agent's example questions; none when it cannot say (the fallback must still answer)."""
    try:
        return list(await agent.examples(limit))
    except Exception:
        return []


class LexicalRouter(RoutingStandIn):
    """A ``ChatModel`` that routes by word overlap. ``examples`` maps a tool name to its
    example (verified) questions."""

    provider = "lexical"
    model = "lexical-router"
    context_window = 1_000_000  # no LLM behind it: nothing to overflow

    def __init__(self, examples: Mapping[str, Sequence[str]] | None = None, *, min_score: float = 0.2,
                 no_match_answer: str = NO_MODEL_ANSWER, generic_name_words: frozenset[str] = GENERIC_NAME_WORDS,
                 verified: Sequence[VerifiedQuestion] | VerifiedSet = (), documents: Mapping[str, object] | None = None,
                 catalog: bool = False, database: str | None = None) -> None:
        """``generic_name_words``: words of tool names that say nothing about the topic
        (``finance`` in ``pokemon_finance`` when every specialist is a finance one).
        ``verified``, ``documents`` and ``catalog``: see the module docstring; in a workspace
        ``verified_set`` is its Catalog's one set, read on each question.
        ``database``: the URL of the workspace's database, for the ``verified add`` hint."""
        self.examples = {name: [words(q) for q in qs] for name, qs in (examples or {}).items()}
        self.min_score = min_score
        self.no_match_answer = no_match_answer
        self.generic_name_words = frozenset(generic_name_words)
        self.verified_set = verified if isinstance(verified, VerifiedSet) else VerifiedSet(verified)  # a workspace's: its Catalog's
        self.documents: dict[str, object] = dict(documents or {})
        self.catalog = catalog or bool(self.verified)
        self.vocabulary: Vocabulary | None = None  # how the workspace reads questions (``baton.phrasing``), when it has its own
        self.semantic: dict[str, AnswersWithoutModel] = {}  # tool name -> semantic-layer agent
        self.document_questions: list[str] = []  # questions the workspace's documents answer (its page's examples)
        self.database = database

    @property
    def verified(self) -> tuple[VerifiedQuestion, ...]:
        return self.verified_set.questions

    @verified.setter
    def verified(self, questions: Sequence[VerifiedQuestion]) -> None:
        self.verified_set = VerifiedSet(questions)  # its own set from now on

    def score(self, question: str, tool: Tool) -> float:
        q = words(question)
        name_words = words(tool.name.replace("_", " "))
        candidates = [words(tool.description), *self.examples.get(tool.name, ())]
        best = max((similarity(q, c) for c in candidates), default=0.0)
        return best + 0.3 * bool(q & (name_words - self.generic_name_words))

    async def complete(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                       temperature: float | None = None, max_tokens: int | None = None) -> LLMResponse:
        last = messages[-1]
        if last.role == "tool":
            return _relay(self, last)
        question = last.content
        names = {t.name for t in tools or ()}
        verified = self.verified_set.questions
        closest = closest_verified(question, verified) if verified else []
        document_tool = await self._document_tool(question, names, closest[0][0] if closest else 0.0)
        if document_tool is not None:
            return self._call(document_tool, question)
        for name, agent in self.semantic.items():
            if name in names and await agent.claims(question):
                return self._call(name, question)
        if self.catalog or verified:
            metrics = await self.metric_examples(names)
            return self._answer(did_you_mean(closest, verified_count=len(verified), metrics=metrics,
                                             documents=self.document_questions, database=self.database))
        scored = sorted(((self.score(question, t), t.name) for t in tools or ()), reverse=True)
        if not scored or scored[0][0] < self.min_score:
            return self._answer(self.no_match_answer)
        return self._call(scored[0][1], question)

    async def metric_examples(self, names: set[str] | None = None, limit: int = 6) -> list[str]:
        """Up to ``limit`` example questions of the semantic agents (of the tools ``names``, if
        given) that this router sends to them: a bare term that a document section is about
        ("Revenue", "Cost by business unit" beside a "Costs" section) goes to the documents,
        so offering it as a metric question would answer it with a passage."""
        found: list[str] = []
        for name, agent in self.semantic.items():
            if names is not None and name not in names:
                continue
            for question in await _examples(agent, 2 * limit):
                if len(found) < limit and await self._document_tool(question, set(self.documents), 0.0) is None:
                    found.append(question)
        return found

    async def _document_tool(self, question: str, names: set[str], verified_similarity: float) -> str | None:
        vocabulary = self.vocabulary or next((v.vocabulary for v in self.verified if v.vocabulary is not None), DEFAULT_VOCABULARY)
        best = None
        for name, agent in self.documents.items():
            if name not in names:
                continue
            found = await probe(name, agent, question, vocabulary)
            if found is not None and (best is None or found.coverage > best.coverage):
                best = found
        if best is not None and documents_win(question, best, verified_similarity, vocabulary):
            return best.tool
        return None

    def _answer(self, text: str) -> LLMResponse:
        """The router's own answer, always the no-model reply: its finish reason is its code."""
        return LLMResponse(content=text, model=self.model, provider=self.provider, finish_reason=MODEL_NOT_CONFIGURED)

    def _call(self, tool: str, question: str) -> LLMResponse:
        call = ToolCall(id=f"lexical_{next(_ids)}", name=tool, arguments={"question": question})
        return LLMResponse(tool_calls=[call], model=self.model, provider=self.provider, finish_reason="tool_calls")

    async def stream(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                     temperature: float | None = None, max_tokens: int | None = None) -> AsyncIterator[StreamChunk]:
        response = await self.complete(messages, tools)
        if response.content:
            yield StreamChunk(delta=response.content)
        yield StreamChunk(response=response)


def did_you_mean(closest: Sequence[tuple[float, VerifiedQuestion]], *, verified_count: int, metrics: Sequence[str] = (),
                 documents: Sequence[str] = (), database: str | None = None) -> str:
    """The no-model answer to a question nothing here answers: what the workspace does answer
    (the closest verified questions, metric questions, document questions, as Markdown
    lists), how to teach it this question (for ``database``'s workspace) and how to set a model."""
    lead = NO_MODEL_SENTENCE
    blocks = []
    near = [v for score, v in closest if score > 0]
    if verified_count == 0:
        lead += " This workspace has no verified questions yet."
    else:
        listed = near or [v for _, v in closest]
        blocks.append(("Did you mean one of these?" if near else "You can ask, for example:",
                       [v.checked_question for v in listed]))
    blocks.append(("Metric questions its semantic model answers, for example:", list(metrics)))
    blocks.append(("Questions its documents answer, for example:", list(documents)))
    said = [f"{title}\n\n" + "\n".join(f"- {q}" for q in questions) for title, questions in blocks if questions]
    return "\n\n".join([lead, *said, f"{add_verified_hint(database)} {SET_A_MODEL}"])


def add_verified_hint(database: str | None) -> str:
    """The command that teaches this workspace a question: with its ``--database`` (password masked)."""
    if not database:
        return ADD_VERIFIED.format(database="")
    shown = _PASSWORD.sub(r"\1***@", database)
    note = " (with your password for ***)" if shown != database else ""
    return ADD_VERIFIED.format(database=f" --database {shlex.quote(shown)}{note}")


class RouteTo(RoutingStandIn):
    """A ``ChatModel`` stand-in that calls one known tool with the question, then relays its
    answer: how the orchestrator routes a verified question without any LLM call."""

    provider = "verified"
    model = "verified-route"
    context_window = 1_000_000

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name

    async def complete(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                       temperature: float | None = None, max_tokens: int | None = None) -> LLMResponse:
        last = messages[-1]
        if last.role == "tool":
            return _relay(self, last)
        call = ToolCall(id=f"verified_{next(_ids)}", name=self.tool_name, arguments={"question": last.content})
        return LLMResponse(tool_calls=[call], model=self.model, provider=self.provider, finish_reason="tool_calls")

    async def stream(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None, *,
                     temperature: float | None = None, max_tokens: int | None = None) -> AsyncIterator[StreamChunk]:
        yield StreamChunk(response=await self.complete(messages, tools))
