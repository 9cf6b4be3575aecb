"""The tool-calling loop with context-pressure management (seed 002).

``run_loop`` drives a ``ChatModel`` through tool calls until it answers; ``LoopSettings``
holds the guard and the window ratios; ``LoopResult`` and ``ToolCallRecord`` are what comes
back. Modules: ``runner`` (the loop), ``dispatch`` (running a turn's tool calls),
``ledger`` (token accounting), ``trimming`` (making the conversation fit), ``partial``
(the answer at max iterations).
"""

from baton.loop.results import LoopResult, ToolCallRecord
from baton.loop.runner import WRAP_UP_INSTRUCTION, run_loop
from baton.loop.settings import LoopSettings

__all__ = ["LoopResult", "LoopSettings", "ToolCallRecord", "WRAP_UP_INSTRUCTION", "run_loop"]
