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
import re
from typing import Mapping, Sequence

from baton.messages import LLMResponse, StreamChunk, ToolCall

NO_MODEL_ANSWER = (
    "No language model is configured, so I can only answer the verified questions of this "
    "workspace. To ask anything else, set BATON_MODEL (for example BATON_MODEL=openai:gpt-4o-mini "
    "with OPENAI_API_KEY, or BATON_MODEL=ollama:llama3.1 for a local Ollama) and restart."
)
_STOP = frozenset(
    "a an and are as at be by did do does for from how i in is it its me of on or our show "
    "tell that the this to was we were what which who with".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_ids = itertools.count(1)


def words(text: str) -> set[str]:
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return out


def similarity(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


class LexicalRouter:
    """A ``ChatModel`` that routes by word overlap. ``examples`` maps a tool name to its
    example (verified) questions."""

    provider = "lexical"
    model = "lexical-router"
    context_window = 1_000_000  # no LLM behind it: nothing to overflow
    is_llm = False  # specialists must not use it as their language model

    def __init__(self, examples: Mapping[str, Sequence[str]] | None = None, *, min_score: float = 0.2,
                 no_match_answer: str = NO_MODEL_ANSWER) -> None:
        self.examples = {name: [words(q) for q in qs] for name, qs in (examples or {}).items()}
        self.min_score = min_score
        self.no_match_answer = no_match_answer

    def score(self, question: str, tool) -> float:
        q = words(question)
        name_words = words(tool.name.replace("_", " "))
        candidates = [words(tool.description), *self.examples.get(tool.name, ())]
        best = max((similarity(q, c) for c in candidates), default=0.0)
        return best + 0.3 * bool(q & (name_words - {"finance", "agent"}))

    async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None) -> LLMResponse:
        last = messages[-1]
        if last.role == "tool":
            return LLMResponse(content=last.content, model=self.model, provider=self.provider, finish_reason="stop")
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
            return LLMResponse(content=last.content, model=self.model, provider=self.provider, finish_reason="stop")
        call = ToolCall(id=f"verified_{next(_ids)}", name=self.tool_name, arguments={"question": last.content})
        return LLMResponse(tool_calls=[call], model=self.model, provider=self.provider, finish_reason="tool_calls")

    async def stream(self, messages, tools=None, *, temperature=None, max_tokens=None):
        yield StreamChunk(response=await self.complete(messages, tools))
