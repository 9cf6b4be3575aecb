"""``LexicalRouter``: routing without an LLM, for the no-model mode.

It implements the ``ChatModel`` protocol, so the orchestrator runs unchanged: on the user's
question it calls the one tool whose name, description and example questions share the most
words with the question; on a tool result it relays the specialist's text. When nothing
matches well enough it answers that no model is configured and how to set one.

Scoring is deliberately simple and explainable: cosine similarity of word sets (lower-cased,
stop words removed, a crude plural strip), the best over the tool's description and each of
its example questions, plus a bonus when a word of the tool's name appears in the question.
"""

from __future__ import annotations

import itertools
import math
from typing import Mapping, Sequence

from baton.messages import LLMResponse, StreamChunk, ToolCall
from baton.verified import content_words

NO_MODEL_ANSWER = (
    "No language model is configured, so I can only answer the verified questions of this "
    "workspace. To ask anything else, set BATON_MODEL (for example BATON_MODEL=openai:gpt-4o-mini "
    "with OPENAI_API_KEY, or BATON_MODEL=ollama:llama3.1 for a local Ollama) and restart."
)
_STOP = frozenset(
    "a an and are as at be by did do does for from how i in is it its me of on or our show "
    "tell that the this to was we were what which who with".split()
)
GENERIC_NAME_WORDS = frozenset({"agent", "specialist", "assistant", "bot", "data"})
_ids = itertools.count(1)


def words(text: str) -> frozenset[str]:
    return content_words(text, _STOP)


def similarity(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


def _relay(model, tool_message) -> LLMResponse:
    """After a tool result, a routing stand-in answers with the specialist's own text."""
    return LLMResponse(content=tool_message.content, model=model.model, provider=model.provider, finish_reason="stop")


class LexicalRouter:
    """A ``ChatModel`` that routes by word overlap. ``examples`` maps a tool name to its
    example (verified) questions."""

    provider = "lexical"
    model = "lexical-router"
    context_window = 1_000_000  # no LLM behind it: nothing to overflow
    is_llm = False  # specialists must not use it as their language model

    def __init__(self, examples: Mapping[str, Sequence[str]] | None = None, *, min_score: float = 0.2,
                 no_match_answer: str = NO_MODEL_ANSWER, generic_name_words: frozenset[str] = GENERIC_NAME_WORDS) -> None:
        """``generic_name_words``: words of tool names that say nothing about the topic
        (``finance`` in ``pokemon_finance`` when every specialist is a finance one)."""
        self.examples = {name: [words(q) for q in qs] for name, qs in (examples or {}).items()}
        self.min_score = min_score
        self.no_match_answer = no_match_answer
        self.generic_name_words = frozenset(generic_name_words)

    def score(self, question: str, tool) -> float:
        q = words(question)
        name_words = words(tool.name.replace("_", " "))
        candidates = [words(tool.description), *self.examples.get(tool.name, ())]
        best = max((similarity(q, c) for c in candidates), default=0.0)
        return best + 0.3 * bool(q & (name_words - self.generic_name_words))

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None) -> LLMResponse:
        last = messages[-1]
        if last.role == "tool":
            return _relay(self, last)
        question = last.content
        scored = sorted(((self.score(question, t), t.name) for t in tools or ()), reverse=True)
        if not scored or scored[0][0] < self.min_score:
            return LLMResponse(content=self.no_match_answer, model=self.model, provider=self.provider, finish_reason="stop")
        call = ToolCall(id=f"lexical_{next(_ids)}", name=scored[0][1], arguments={"question": question})
        return LLMResponse(tool_calls=[call], model=self.model, provider=self.provider, finish_reason="tool_calls")

    async def stream(self, messages, tools=None, *, temperature=None, max_tokens=None):
        response = await self.complete(messages, tools)
        if response.content:
            yield StreamChunk(delta=response.content)
        yield StreamChunk(response=response)


class RouteTo:
    """A ``ChatModel`` stand-in that calls one known tool with the question, then relays its
    answer: how the orchestrator routes a verified question without any LLM call."""

    provider = "verified"
    model = "verified-route"
    context_window = 1_000_000
    is_llm = False

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None) -> LLMResponse:
        last = messages[-1]
        if last.role == "tool":
            return _relay(self, last)
        call = ToolCall(id=f"verified_{next(_ids)}", name=self.tool_name, arguments={"question": last.content})
        return LLMResponse(tool_calls=[call], model=self.model, provider=self.provider, finish_reason="tool_calls")

    async def stream(self, messages, tools=None, *, temperature=None, max_tokens=None):
        yield StreamChunk(response=await self.complete(messages, tools))
