"""``ExecutionMemory``: the agent results of ONE request, keyed by tool-call id.

Created per ``ask()`` and reached through the request's context, never stored on the
orchestrator or on an AgentTool, so concurrent requests can't see each other's results. Keyed
by call id, a specialist called twice in one request keeps both results.

It is also how a specialist reads what ran before it in the same request (seed 000's
cross-pollination context, which Baton offers rather than injects: ``OrchestratorAgent``'s
docstring): ``successful()`` in call order, ``by_agent()`` grouped by agent name. Calls of
one model turn run concurrently, so only earlier turns' results are sure to be there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baton.agents.result import AgentResult


@dataclass
class ExecutionMemory:
    original_query: str = ""
    results: dict[str, AgentResult] = field(default_factory=dict)  # call_id -> result, in call order

    def record(self, call_id: str, result: AgentResult) -> str:
        """Keep ``result`` under ``call_id`` (suffixed ``#2``, ``#3``... if a model reused an
        id in a later turn, so no result is ever overwritten); returns the key used."""
        key, n = call_id, 1
        while key in self.results:
            n += 1
            key = f"{call_id}#{n}"
        result.call_id = key
        self.results[key] = result
        return key

    def successful(self) -> list[AgentResult]:
        """The results that succeeded, in call order."""
        return [r for r in self.results.values() if r.ok]

    def by_agent(self) -> dict[str, list[AgentResult]]:
        """Every result grouped by ``agent_name``, each group in call order."""
        grouped: dict[str, list[AgentResult]] = {}
        for result in self.results.values():
            grouped.setdefault(result.agent_name, []).append(result)
        return grouped
