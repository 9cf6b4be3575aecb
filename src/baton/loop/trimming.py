"""Making a conversation fit: drop the oldest history, never split a tool call from its result.

Both in-loop trimming (at ~80 % of the window) and compression after a context-length error
(to 60 %) use the same rule. The conversation is cut into *units*: an assistant message that
called tools together with every tool message answering those calls is one unit; any other
message is a unit of its own. Units are dropped oldest first, whole, so no tool result is
ever left without the assistant call it answers (providers reject that) and no call is left
without its result.

Never dropped:
- system messages (the system prompt, instructions, the wrap-up notice);
- the original user question (the last user message the caller passed in);
- the most recent other unit (usually the tool results the model asked for a moment ago:
  dropping them would make it ask again; a wrap-up notice after them does not count).

When that is still too much, trimming says so and leaves the rest to the provider;
compression, which follows a real overflow, then shortens the largest tool results
(head kept, a marker saying how much was cut) as its last rung.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from baton.llm.tokens import message_tokens
from baton.messages import Message

MIN_TOOL_RESULT_TOKENS = 64  # a shortened tool result keeps at least this much of its head
TRUNCATION_MARKER = "\n[... {cut} characters cut to fit the context window]"


@dataclass(slots=True)
class Trimmed:
    """A cut-down conversation with its counts, and what the cut did."""

    messages: list[Message]
    counts: list[int]
    removed: int  # messages dropped
    shortened: int  # tool results truncated
    fits: bool


def group_units(messages: list[Message]) -> list[list[int]]:
    """Indices of ``messages`` grouped into units, in order of their first message.

    Tool messages join the unit of the most recent assistant message that issued their
    ``tool_call_id`` (so ids reused across turns by some local models still pair correctly);
    a tool message answering no known call is a unit of its own.
    """
    units: list[list[int]] = []
    owner: dict[str, int] = {}
    for i, message in enumerate(messages):
        if message.role == "tool" and message.tool_call_id in owner:
            units[owner[message.tool_call_id]].append(i)
            continue
        units.append([i])
        if message.role == "assistant" and message.tool_calls:
            unit = len(units) - 1
            for call in message.tool_calls:
                owner[call.id] = unit
    return units


def drop_oldest(
    messages: list[Message],
    counts: list[int],
    budget: int,
    is_protected: Callable[[Message], bool],
) -> Trimmed:
    """Drop whole unprotected units, oldest first, until the counts sum to ``budget`` or less."""
    total = sum(counts)
    if total <= budget:
        return Trimmed(messages, counts, 0, 0, True)
    removable = [u for u in group_units(messages) if not any(is_protected(messages[i]) for i in u)]
    removed: set[int] = set()
    for unit in removable[:-1]:  # the most recent unprotected unit always stays
        if total <= budget:
            break
        removed.update(unit)
        total -= sum(counts[i] for i in unit)
    if not removed:
        return Trimmed(messages, counts, 0, 0, total <= budget)
    kept = [i for i in range(len(messages)) if i not in removed]
    return Trimmed([messages[i] for i in kept], [counts[i] for i in kept], len(removed), 0, total <= budget)


def shorten_tool_results(messages: list[Message], counts: list[int], budget: int) -> Trimmed:
    """Truncate the largest tool results (largest first) until the counts fit ``budget``.

    Returns new lists; the shortened messages are new ``Message`` objects, so a caller's
    messages are never modified.
    """
    total = sum(counts)
    messages, counts = list(messages), list(counts)
    shortened = 0
    by_size = sorted((i for i, m in enumerate(messages) if m.role == "tool"), key=lambda i: -counts[i])
    for i in by_size:
        excess = total - budget
        if excess <= 0:
            break
        old = messages[i]
        keep_tokens = max(MIN_TOOL_RESULT_TOKENS, counts[i] - excess)
        if keep_tokens >= counts[i]:
            continue
        keep_chars = int(len(old.content) * keep_tokens / counts[i])
        cut = len(old.content) - keep_chars
        new = Message(
            "tool", old.content[:keep_chars] + TRUNCATION_MARKER.format(cut=cut), tool_call_id=old.tool_call_id, name=old.name
        )
        new_count = message_tokens(new)
        total += new_count - counts[i]
        messages[i], counts[i] = new, new_count
        shortened += 1
    return Trimmed(messages, counts, 0, shortened, total <= budget)


def compress(
    messages: list[Message],
    counts: list[int],
    budget: int,
    is_protected: Callable[[Message], bool],
) -> Trimmed:
    """Drop oldest units, then shorten tool results if that was not enough."""
    dropped = drop_oldest(messages, counts, budget, is_protected)
    if dropped.fits:
        return dropped
    short = shorten_tool_results(dropped.messages, dropped.counts, budget)
    return Trimmed(short.messages, short.counts, dropped.removed, short.shortened, short.fits)
