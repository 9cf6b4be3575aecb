"""``DataFrameAgent``: questions over named DataFrames/CSV/Parquet, answered with DuckDB SQL.

It is the SQL agent's validation loop (safety check, pre-validation, repair, caps,
learnings, presentation) over a ``FrameStore``'s read-only DuckDB connection; only the
name, the description and where the tables come from differ. The model's SQL can read the
registered tables and nothing else: ``read_csv('/etc/passwd')`` and ``COPY`` are refused
by the parser check, and the engine has file access switched off as well.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping

from baton.agents import AgentContext, BaseAgent
from baton.llm.base import ChatModel
from baton.specialists.dataframe.store import FrameStore
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.engines import ConnectionOptions
from baton.specialists.sql.result import SQLAgentResult


class DataFrameAgent(BaseAgent):
    name = "dataframe"
    description = "Answers questions about in-memory tables (DataFrames, CSV, Parquet) with DuckDB SQL."

    def __init__(
        self,
        frames: Mapping[str, Any] | FrameStore,
        *,
        name: str | None = None,
        description: str | None = None,
        model: ChatModel | None = None,
        options: ConnectionOptions | None = None,
        **sql_agent_options: Any,
    ) -> None:
        super().__init__(name, description, model=model)
        self.store = frames if isinstance(frames, FrameStore) else FrameStore(frames, options=options)
        self._sql_options = sql_agent_options
        self._sql_agent: SQLAgent | None = None

    async def _agent(self) -> SQLAgent:
        if self._sql_agent is None:
            connection = await asyncio.to_thread(self.store.connection)
            self._sql_agent = SQLAgent(connection, name=self.name, model=self.model, **self._sql_options)
        return self._sql_agent

    async def configure(self) -> None:
        await (await self._agent()).configure()

    def validate_result(self, result: SQLAgentResult) -> list[str]:
        return SQLAgent.validate_result(self._sql_agent, result) if self._sql_agent else []  # type: ignore[arg-type]

    async def run(self, context: AgentContext, **kwargs: Any) -> SQLAgentResult:
        return await (await self._agent()).run(context, **kwargs)

    def refresh(self) -> None:
        """Re-read the sources on the next request (after a DataFrame or file changed)."""
        self.store.refresh()
        self._sql_agent = None

    def close(self) -> None:
        self.store.close()
        self._sql_agent = None
