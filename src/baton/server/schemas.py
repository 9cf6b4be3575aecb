"""Request bodies of the HTTP API. Pydantic validates them, so a malformed body gets a 422
naming the field and the reason (never echoing the input: ``errors.py``).

Limits are the stores' own: a question is at most ``MAX_QUESTION_CHARS`` on every route; a
feedback comment at most what memory keeps in a record (``baton.memory.model.MAX_TEXT_CHARS``),
so nothing the schema accepts is refused later, half-stored; ids at most ``MAX_ID_CHARS``.
A turn's idempotency key (``turn_id`` in a body, or the ``Idempotency-Key`` header:
``baton.state.turn_keys``) is read by ``turn_key``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from baton.memory.model import MAX_TEXT_CHARS
from baton.state.turn_keys import KEY_HEADER, MAX_KEY_CHARS, checked_key, new_key

MAX_QUESTION_CHARS = 20_000
MAX_ID_CHARS = 100
MAX_CHAT_MESSAGES = 500


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskRequest(Strict):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, in plain language.")
    session_id: str | None = Field(None, max_length=MAX_ID_CHARS, description="Continue this conversation (omit to start one).")
    turn_id: str | None = Field(None, min_length=1, max_length=MAX_KEY_CHARS, pattern=r"^[!-~]+$",
                                description="The turn's idempotency key: the same key again returns the stored answer.")


def turn_key(headers: Any, body_key: str | None, *, generate: bool = True) -> str | None:
    """The request's idempotency key: the ``Idempotency-Key`` header, else the body's
    ``turn_id``, else a new one (``generate``). ``BadTurnKey`` for a malformed header."""
    key = checked_key(headers.get(KEY_HEADER)) or body_key
    return key if key is not None or not generate else new_key()


class LoginRequest(Strict):
    key: str = Field(min_length=1, max_length=500)


class FeedbackRequest(Strict):
    turn_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    thumbs: Literal["up", "down"] | None = None
    verdict: Literal["confirmed", "approximate", "rejected"] | None = None
    comment: str | None = Field(None, max_length=MAX_TEXT_CHARS)


class DismissInsightRequest(Strict):
    insight_id: str = Field(min_length=1, max_length=200)
    turn_id: str | None = Field(None, max_length=MAX_ID_CHARS)


class CheckpointDecision(Strict):
    action: Literal["approve", "edit", "reject"]
    question: str | None = Field(None, max_length=MAX_QUESTION_CHARS, description="The edited question for the next stage (action=edit).")
    session_id: str | None = Field(None, max_length=MAX_ID_CHARS, description="Record the outcome as a turn of this conversation.")
    stage_id: str | None = Field(None, max_length=200, description="The checkpoint being answered: a stale or repeated decision is refused.")
    target_stage: str | None = Field(None, max_length=200, description="For edit: the stage whose question changes (default: the next one).")
    wait: bool = Field(True, description="Reply with the run's next outcome (false: 202 at once).")


class StartPipelineRequest(Strict):
    question: str | None = Field(None, min_length=1, max_length=MAX_QUESTION_CHARS, description="Planned by the workspace's planner.")
    plan: dict[str, Any] | None = Field(None, description="An ExecutionPlan as JSON (instead of a question).")
    session_id: str | None = Field(None, max_length=MAX_ID_CHARS, description="The conversation the run belongs to.")

    @model_validator(mode="after")
    def _one_of(self) -> StartPipelineRequest:
        if (self.question is None) == (self.plan is None):
            raise ValueError("give either a question or a plan")
        return self


class ChartRequest(Strict):
    spec: dict[str, Any] = Field(description="A Vega-Lite spec (an answer's viz_config).")


class ContentPart(BaseModel):
    """One part of a message's content. Only text parts are read; any other kind (an
    image, audio) is refused by the route, since no specialist could see it."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(max_length=50)
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[ContentPart] | None = None


class ChatCompletionRequest(BaseModel):
    """The OpenAI chat-completions body; fields we don't use are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_CHAT_MESSAGES)
    stream: bool = False
