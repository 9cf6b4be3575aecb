"""Request bodies of the HTTP API. Pydantic validates them, so a malformed body gets a 422
naming the field and the reason."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskRequest(Strict):
    question: str = Field(min_length=1, max_length=20_000, description="The question, in plain language.")
    session_id: str | None = Field(None, description="Continue this conversation (omit to start one).")


class LoginRequest(Strict):
    key: str = Field(min_length=1, max_length=500)


class FeedbackRequest(Strict):
    turn_id: str = Field(min_length=1)
    thumbs: Literal["up", "down"] | None = None
    verdict: Literal["confirmed", "approximate", "rejected"] | None = None
    comment: str | None = Field(None, max_length=5_000)


class DismissInsightRequest(Strict):
    insight_id: str = Field(min_length=1, max_length=200)
    turn_id: str | None = None


class CheckpointDecision(Strict):
    action: Literal["approve", "edit", "reject"]
    question: str | None = Field(None, description="The edited question for the next stage (action=edit).")
    session_id: str | None = Field(None, description="Record the outcome as a turn of this conversation.")
    stage_id: str | None = Field(None, description="The checkpoint being answered: a stale or repeated decision is refused.")
    target_stage: str | None = Field(None, description="For edit: the stage whose question changes (default: the next one).")
    wait: bool = Field(True, description="Reply with the run's next outcome (false: 202 at once).")


class StartPipelineRequest(Strict):
    question: str | None = Field(None, min_length=1, max_length=20_000, description="Planned by the workspace's planner.")
    plan: dict[str, Any] | None = Field(None, description="An ExecutionPlan as JSON (instead of a question).")
    session_id: str | None = Field(None, description="The conversation the run belongs to.")

    @model_validator(mode="after")
    def _one_of(self) -> "StartPipelineRequest":
        if (self.question is None) == (self.plan is None):
            raise ValueError("give either a question or a plan")
        return self


class ChartRequest(Strict):
    spec: dict[str, Any] = Field(description="A Vega-Lite spec (an answer's viz_config).")


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionRequest(BaseModel):
    """The OpenAI chat-completions body; fields we don't use are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
