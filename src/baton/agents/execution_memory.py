"""``ExecutionMemory``: the agent results of ONE request, keyed by tool-call id.

Created per ``ask()`` and reached through the request's context, never stored on the
orchestrator or on an AgentTool, so concurrent requests can't see each other's results. Keyed
by call id, a specialist called twice in one request keeps both results.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baton.agents.result import AgentResult


@dataclass
class ExecutionMemory:
    original_query: str = ""
    results: dict[str, AgentResult] = field(default_factory=dict)  # call_id -> result, in call order

    def record(self, call_id: str, result: AgentResult) -> None:
        result.call_id = call_id
        self.results[call_id] = result

    def successful(self) -> list[AgentResult]:
        return [r for r in self.results.values() if r.ok]

    def by_agent(self) -> dict[str, list[AgentResult]]:
        grouped: dict[str, list[AgentResult]] = {}
        for result in self.results.values():
            grouped.setdefault(result.agent_name, []).append(result)
        return grouped
