"""What a conversation is made of, as the store (``sessions.py``) hands it out: a summary
per session, its turns, the chat history they make for the next question, and the digest a
chat client's copy of a reply is known by."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from baton.errors import BatonError
from baton.messages import Message
from baton.response import AIMessage


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session_id: str
    title: str
    created_at: str
    updated_at: str
    turns: int


@dataclass(frozen=True, slots=True)
class Turn:
    seq: int
    question: str
    answer: AIMessage


class SessionNotFound(BatonError, LookupError):
    """No such session in the caller's workspace (it may exist in another: we don't say)."""


def history_of(turns: list[Turn], max_turns: int = 10) -> list[Message]:
    """Turns as chat messages (the SQL behind an answer included, for follow-ups)."""
    out: list[Message] = []
    for turn in turns[-max_turns:]:
        out.append(Message.user(turn.question))
        text = turn.answer.content
        if turn.answer.query:
            text += f"\n(SQL used: {turn.answer.query})"
        out.append(Message.assistant(text))
    return out


def reply_digest(text: str) -> str:
    """The digest of a reply as a chat client shows it (whitespace-insensitive)."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()
