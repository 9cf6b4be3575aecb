"""``KnowledgeAgent``: answers questions from indexed documents, citing its sources.

One request: retrieve the top-k chunks (hybrid when the index has embeddings), ask the
model to answer from them citing ``[n]``, and return an ``AIMessage`` with
``response_type=knowledge`` whose ``source_documents`` are the
chunks the answer actually cites (file, chunk id, score, text).

Result validation (seed 002 "Sub-agent retry", Knowledge): a non-empty answer with at
least one valid citation, else ``status="no_result"``. Decisions a demanding user would
expect: when retrieval finds nothing the model is not called at all (no cost, no invented
answer) and the result says so; an answer without citations is not shown as an answer —
its text is kept in ``metadata["uncited_answer"]`` for inspection, and the chunks that were
retrieved are listed in ``metadata["retrieved"]``. With no model configured at all, the
answer is the best passages themselves, cited (``metadata["fast_path"] = "passages"``).
Configuration problems (an embedding-model mismatch) raise ``AgentFatalError``; transient provider failures raise
``AgentRetryableError`` so ``AgentTool`` retries them. When a terse follow-up question
retrieves nothing on its own, retrieval is retried once with the previous user turn added
(no LLM rewrite: it costs nothing and leaves self-contained questions untouched).
"""

from __future__ import annotations

import time
from typing import Any

from baton.agents import AgentContext, AgentResult, BaseAgent
from baton.errors import AgentFatalError, AgentRetryableError, ConfigurationError, ProviderError
from baton.events import KnowledgeAnswerStart, KnowledgeRetrieval
from baton.llm.base import ChatModel
from baton.response import AIMessage, ResponseType, SourceDocument
from baton.specialists.knowledge.errors import EmbeddingError, EmbeddingModelMismatchError
from baton.specialists.knowledge.index import KnowledgeIndex, SearchHit, SearchMode
from baton.specialists.knowledge.prompt import build_messages, parse_citations

NOTHING_FOUND = "I found nothing in the indexed documents about this question."
NOT_SOURCED = "I could not find a sourced answer to this question in the indexed documents."
PASSAGES_HEADER = "No language model is configured, so here are the most relevant passages from the documents:"
NO_MODEL_PASSAGES = 3
PASSAGE_CHARS = 400


class KnowledgeAgent(BaseAgent):
    """Retrieval-augmented answers over a ``KnowledgeIndex``. Holds configuration only."""

    name = "knowledge"
    description = (
        "Answers questions from the organisation's documents (policies, handbooks, product "
        "docs, notes, source code) and cites the passages it used."
    )

    def __init__(
        self,
        index: KnowledgeIndex,
        *,
        name: str | None = None,
        description: str | None = None,
        model: Any = None,
        top_k: int = 5,
        search_mode: SearchMode = "auto",
        max_source_chars: int = 12_000,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(name, description, model=model)
        if top_k < 1:
            raise ConfigurationError("top_k must be at least 1")
        self.index = index
        self.top_k = top_k
        self.search_mode = search_mode
        self.max_source_chars = max_source_chars
        self.temperature = temperature
        self.max_tokens = max_tokens

    async def run(self, context: AgentContext, question: str | None = None, *, top_k: int | None = None, **kwargs: Any) -> AgentResult:
        started = time.perf_counter()
        question = (question or context.user_question or "").strip()
        if not question:
            return AgentResult(
                agent_name=self.name, status="error", error="no question was given",
                error_type="AgentValidationError",
            )  # fmt: skip
        k = top_k or self.top_k
        hits = await self._retrieve(context, question, k)
        if not hits:  # a terse follow-up ("and for hotels?"): lean on the previous user turn
            previous = next((m.content for m in reversed(context.chat_history) if m.role == "user" and m.content), "")
            if previous and previous.strip() != question:
                hits = await self._retrieve(context, f"{question}\n{previous}", k)
        if not hits:
            message = AIMessage(
                content=NOTHING_FOUND, response_type=ResponseType.KNOWLEDGE,
                metadata={"retrieved": [], "llm_called": False},
            )  # fmt: skip
            return self._result(question, "no_result", NOTHING_FOUND, message, {}, started)

        hits = self._fit(hits)
        if not self.has_model(context):
            return self._passages(question, hits, started)
        model = self._model(context)
        extra = kwargs.get("extra_context")
        messages = build_messages(question, hits, history=context.chat_history, extra_context=str(extra) if extra else None)
        context.emit(KnowledgeAnswerStart(agent=self.name, sources=len(hits), model=model.model))
        try:
            response = await model.complete(messages, temperature=self.temperature, max_tokens=self.max_tokens)
        except ProviderError as exc:
            error = AgentRetryableError if exc.retryable else AgentFatalError
            raise error(f"{self.name}: the model failed: {exc}") from exc
        answer = (response.content or "").strip()
        cited = parse_citations(answer, len(hits))
        retrieved = [_hit_summary(hit) for hit in hits]
        if not answer or not cited:
            reason = "the model returned an empty answer" if not answer else "the answer cites no source"
            message = AIMessage(
                content=NOT_SOURCED, response_type=ResponseType.KNOWLEDGE, token_usage=dict(response.usage),
                llm_provider=response.provider, llm_model=response.model,
                metadata={"retrieved": retrieved, "llm_called": True, "uncited_answer": answer, "reason": reason},
            )  # fmt: skip
            return self._result(question, "no_result", NOT_SOURCED, message, response.usage, started)

        sources = [_source_document(hits[n - 1], n) for n in cited]
        message = AIMessage(
            content=answer, source_documents=sources, response_type=ResponseType.KNOWLEDGE,
            token_usage=dict(response.usage), llm_provider=response.provider, llm_model=response.model,
            metadata={"retrieved": retrieved, "llm_called": True, "citations": cited},
        )  # fmt: skip
        text = answer + "\n\nSources:\n" + "\n".join(_source_line(hits[n - 1], n) for n in cited)
        return self._result(question, "success", text, message, response.usage, started)

    def _passages(self, question: str, hits: list[SearchHit], started: float) -> AgentResult:
        """No model configured: the best passages themselves, cited, instead of an error.
        Retrieval needs no LLM, and a quoted source answers many "how is X defined" questions."""
        from baton.specialists.knowledge.passages import passages_answer

        answer, sources = passages_answer(question, hits)  # clean Markdown, each source once
        message = AIMessage(
            content=answer, source_documents=sources, response_type=ResponseType.KNOWLEDGE,
            metadata={"retrieved": [_hit_summary(hit) for hit in hits], "llm_called": False, "fast_path": "passages", "llm_calls": 0},
        )  # fmt: skip
        return self._result(question, "success", answer, message, {}, started)

    def validate_result(self, result: AgentResult) -> list[str]:
        """Seed 002's knowledge checks, for ``AgentTool``: non-empty answer, citations present."""
        problems: list[str] = []
        message = result.ai_message
        if result.status == "success":
            if message is None or not message.content.strip():
                problems.append("the knowledge answer is empty")
            elif not message.source_documents:
                problems.append("the knowledge answer cites no source")
        return problems

    # -- steps -----------------------------------------------------------------------------
    async def _retrieve(self, context: AgentContext, question: str, k: int) -> list[SearchHit]:
        started = time.perf_counter()
        try:
            hits = await self.index.search(question, k, mode=self.search_mode)
        except (EmbeddingModelMismatchError, ConfigurationError) as exc:
            raise AgentFatalError(f"{self.name}: {exc}") from exc
        except ProviderError as exc:  # the embedding endpoint
            error = AgentRetryableError if exc.retryable else AgentFatalError
            raise error(f"{self.name}: embedding the question failed: {exc}") from exc
        except EmbeddingError as exc:
            raise AgentFatalError(f"{self.name}: {exc}") from exc
        context.emit(KnowledgeRetrieval(
            agent=self.name, hits=len(hits), mode=hits[0].mode if hits else self.search_mode,
            sources=[hit.chunk.id for hit in hits], duration_ms=round((time.perf_counter() - started) * 1000, 3),
        ))  # fmt: skip
        return hits

    def _fit(self, hits: list[SearchHit]) -> list[SearchHit]:
        """Keep hits in rank order while their texts fit ``max_source_chars`` (always one)."""
        kept: list[SearchHit] = []
        used = 0
        for hit in hits:
            size = len(hit.chunk.text)
            if kept and used + size > self.max_source_chars:
                break
            kept.append(hit)
            used += size
        return kept

    def _model(self, context: AgentContext) -> ChatModel:
        try:
            return self.model_for(context)
        except ConfigurationError as exc:
            raise AgentFatalError(str(exc)) from exc

    def _result(self, question, status, text, message, usage, started) -> AgentResult:
        return AgentResult(
            agent_name=self.name, task=question, status=status, result=text, ai_message=message,
            token_usage=dict(usage or {}), execution_time=time.perf_counter() - started,
        )  # fmt: skip


def _source_document(hit: SearchHit, citation: int) -> SourceDocument:
    chunk = hit.chunk
    metadata: dict[str, Any] = {
        "citation": citation, "title": chunk.title, "start_line": chunk.start_line, "end_line": chunk.end_line,
        "format": chunk.format, "retrieval": hit.mode, "lexical_rank": hit.lexical_rank, "vector_rank": hit.vector_rank,
    }  # fmt: skip
    metadata.update({k: v for k, v in chunk.metadata.items() if k == "page"})
    return SourceDocument(source=chunk.source, content=chunk.text, chunk_id=chunk.id, score=round(hit.score, 6), metadata=metadata)


def _source_line(hit: SearchHit, citation: int) -> str:
    chunk = hit.chunk
    where = f", {chunk.title}" if chunk.title else ""
    return f"[{citation}] {chunk.source}{where} (lines {chunk.start_line}-{chunk.end_line})"


def _hit_summary(hit: SearchHit) -> dict[str, Any]:
    return {"chunk_id": hit.chunk.id, "source": hit.chunk.source, "score": round(hit.score, 6), "mode": hit.mode}
