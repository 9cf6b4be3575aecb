"""``FolderKnowledgeAgent``: a knowledge specialist over one folder of documents, indexed on
first use (once, even under concurrent first requests). Re-indexing unchanged files writes
nothing, so a restart costs one quick pass over the folder."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from baton.agents import AgentContext
from baton.agents.result import AgentResult
from baton.specialists.knowledge.agent import KnowledgeAgent
from baton.specialists.knowledge.index import KnowledgeIndex


class FolderKnowledgeAgent(KnowledgeAgent):
    def __init__(self, folder: str | Path, index_path: str | Path = ":memory:", **kwargs: Any) -> None:
        super().__init__(KnowledgeIndex(index_path), **kwargs)
        self.folder = Path(folder)
        self._indexed = False
        self._lock = asyncio.Lock()

    async def configure(self) -> None:
        if self._indexed:
            return
        async with self._lock:
            if not self._indexed:
                await self.index.add_directory(self.folder)
                self._indexed = True

    async def run(self, context: AgentContext, question: str | None = None, **kwargs: Any) -> AgentResult:
        await self.configure()
        return await super().run(context, question, **kwargs)
