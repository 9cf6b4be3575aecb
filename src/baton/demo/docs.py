"""The demo's documents: metric definitions, data rules and a glossary (``doctrine/``).

They serve twice, as the workspace would in real life: indexed into memory as *doctrine*
(always eligible for the SQL specialists' per-task bundle, so "revenue is in cents" reaches
every query), and searchable by ``finance_docs``, a knowledge specialist that answers
"how is profit defined?" with citations (or, with no model, with the cited passages).
"""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path
from typing import Any

from baton.agents import AgentContext
from baton.agents.result import AgentResult
from baton.specialists.knowledge import KnowledgeAgent, KnowledgeIndex


def doctrine_folder() -> Path:
    return Path(str(resources.files("baton.demo") / "doctrine"))


class DemoDocsAgent(KnowledgeAgent):
    """A knowledge specialist over the doctrine folder, indexed on first use (once, even
    under concurrent first requests; re-indexing unchanged files writes nothing)."""

    def __init__(self, index_path: Path, **kwargs: Any) -> None:
        super().__init__(KnowledgeIndex(index_path), **kwargs)
        self._indexed = False
        self._lock = asyncio.Lock()

    async def configure(self) -> None:
        if self._indexed:
            return
        async with self._lock:
            if not self._indexed:
                await self.index.add_directory(doctrine_folder())
                self._indexed = True

    async def run(self, context: AgentContext, /, question: str | None = None, **kwargs: Any) -> AgentResult:
        await self.configure()
        return await super().run(context, question, **kwargs)
