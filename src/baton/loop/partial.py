"""The answer given when the loop runs out of iterations (seed 002: "compose partial answer
from gathered data").

It is composed from the tool outputs without another LLM call. Decision: the guard exists
because the model kept calling tools; one more call would cost the tokens of the longest
prompt of the request and may well ask for tools again. The program gets the typed records
(``LoopResult.tool_calls``, ``partial=True``) and may summarise them itself; the user gets
every successful result, labelled with the tool and step that produced it, and a count of
the failed calls. Long outputs are shortened so the answer stays readable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from baton.loop.results import ToolCallRecord

MAX_RESULT_CHARS = 2000
MAX_ARGUMENT_CHARS = 160


def compose_partial_answer(records: Sequence[ToolCallRecord], *, max_iterations: int, last_note: str = "") -> str:
    """A labelled digest of what the tools returned before the guard stopped the loop."""
    lines = [
        f"I reached the maximum number of analysis steps ({max_iterations}) before composing a final answer. "
        "Here is what I found so far."
    ]
    if last_note.strip():
        lines.append(f"Last note: {last_note.strip()}")
    succeeded = [r for r in records if not r.output.is_error]
    for record in succeeded:
        text = record.output.text.strip() or "(empty result)"
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + f"\n[... {len(text) - MAX_RESULT_CHARS} more characters]"
        lines.append(f"Result of {record.call.name}({_arguments(record)}) at step {record.iteration}:\n{text}")
    failed = len(records) - len(succeeded)
    if not succeeded:
        lines.append("No tool call returned a usable result.")
    if failed:
        lines.append(f"{failed} tool call{'s' if failed != 1 else ''} failed and {'are' if failed != 1 else 'is'} not shown.")
    return "\n\n".join(lines)


def _arguments(record: ToolCallRecord) -> str:
    try:
        text = json.dumps(record.call.arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(record.call.arguments)
    return text if len(text) <= MAX_ARGUMENT_CHARS else text[: MAX_ARGUMENT_CHARS - 3] + "..."
