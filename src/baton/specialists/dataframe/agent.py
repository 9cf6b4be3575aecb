"""``DataFrameAgent``: questions over named DataFrames/CSV/Parquet, answered with DuckDB SQL.

It is the SQL agent's validation loop (safety check, pre-validation, repair, caps,
learnings, presentation) over a ``FrameStore``'s read-only DuckDB connection; only the
name, the description and where the tables come from differ. The model's SQL can read the
registered tables and nothing else: ``read_csv('/etc/passwd')`` and ``COPY`` are refused
by the parser check, and the engine has file access switched off as well.

Every request leases the store's current copy (``FrameStore.lease``), so ``refresh()`` and
``close()`` are safe while requests run; one ``SQLAgent`` serves each copy.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Mapping
from typing import Any

from baton.agents import AgentContext, AgentResult, BaseAgent
from baton.errors import AgentFatalError
from baton.llm.base import ChatModel
from baton.specialists.dataframe.store import FrameStore
from baton.specialists.sql.agent import SQLAgent
from baton.specialists.sql.connection import ConnectionOptions, SQLConnection
from baton.specialists.sql.result import SQLAgentResult


class DataFrameAgent(BaseAgent):
    name = "dataframe"
    description = "Answers questions about in-memory tables (DataFrames, CSV, Parquet) with DuckDB SQL."

    def __init__(
        self,
        frames: Mapping[str, Any] | FrameStore | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        model: ChatModel | None = None,
        options: ConnectionOptions | None = None,
        **sql_agent_options: Any,
    ) -> None:
        super().__init__(name, description, model=model)
        # None: no standing tables; every request brings its own (``run(..., frames=...)``)
        self.store = frames if isinstance(frames, FrameStore) or frames is None else FrameStore(frames, options=options)
        self._options = options
        self._sql_options = sql_agent_options
        self._sql_agent: SQLAgent | None = None
        self._agent_lock = threading.Lock()

    async def sql_agent(self) -> SQLAgent:
        """The SQL agent over the store's current copy (one per copy, however many
        requests ask for it at once)."""
        if self.store is None:
            raise AgentFatalError(f"{self.name} has no standing tables: its SQL agent exists per request")
        connection = await asyncio.to_thread(self.store.connection)
        return self._agent_for(connection)

    def _agent_for(self, connection: SQLConnection) -> SQLAgent:
        with self._agent_lock:  # check and build in one step: concurrent first requests share one
            if self._sql_agent is None or self._sql_agent.connection is not connection:
                self._sql_agent = SQLAgent(connection, name=self.name, model=self.model, **self._sql_options)
            return self._sql_agent

    async def configure(self) -> None:
        if self.store is None:
            return
        async with self.store.lease() as connection:
            await self._agent_for(connection).configure()

    def validate_result(self, result: AgentResult) -> list[str]:
        agent = self._sql_agent
        return agent.validate_result(result) if agent is not None else []

    async def run(self, context: AgentContext, **kwargs: Any) -> SQLAgentResult:
        """Answer on the current copy, which stays open until this request ends even if
        ``refresh()`` or ``close()`` is called meanwhile. Raises ``FrameStoreClosedError``
        after ``close()``."""
        frames = kwargs.pop("frames", None)
        if frames:
            return await self._run_with(frames, context, kwargs)
        if self.store is None:
            raise AgentFatalError(f"{self.name} has no tables: pass frames=... to the agent or to this request")
        async with self.store.lease() as connection:
            return await self._agent_for(connection).run(context, **kwargs)

    async def _run_with(self, frames: Mapping[str, Any], context: AgentContext, kwargs: dict[str, Any]) -> SQLAgentResult:
        """This request's own tables (a pipeline's ``analyze_results`` passes its dependencies'
        results, named by stage id) beside the standing ones, in a copy only it uses."""
        tables = dict(self.store.frames) if self.store is not None else {}
        tables.update({_table_name(name): frame for name, frame in frames.items()})
        store = FrameStore(tables, options=self.store.options if self.store is not None else self._options)
        try:
            async with store.lease() as connection:
                agent = SQLAgent(connection, name=self.name, model=self.model, **self._sql_options)
                return await agent.run(context, **kwargs)
        finally:
            await asyncio.to_thread(store.close)

    def refresh(self) -> None:
        """Re-read the sources on the next request (after a DataFrame or file changed)."""
        if self.store is not None:
            self.store.refresh()

    def close(self) -> None:
        """Take no new requests; the copy goes once the running ones finish."""
        if self.store is not None:
            self.store.close()


def _table_name(name: str) -> str:
    """A stage id as a plain SQL identifier (``stage-1`` -> ``stage_1``)."""
    cleaned = re.sub(r"\W", "_", str(name)).strip("_") or "frame"
    return cleaned if not cleaned[0].isdigit() else f"t_{cleaned}"
