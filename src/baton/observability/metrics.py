"""``/metrics``: the process's counters in Prometheus' text format.

Why: a write that cannot be made must be visible where operators look, not only in a log
line. Counted today (summed over the process's workspaces: any API key may read them, so
no workspace is named):

- ``baton_memory_writes_total{outcome}``: advisory memory writes (insights, learnings,
  usage counts) ``offered``, and how each ended: ``stored``, ``shed`` (by the queue's
  policy) or ``failed`` (``baton.state.advisory_queue``);
- ``baton_memory_advisory_queued``: advisory writes waiting or running now;
- ``baton_memory_commits_total`` / ``baton_memory_committed_writes_total`` /
  ``baton_memory_failed_writes_total``: the memory store's group transactions, and the
  writes committed or failed with them (``baton.memory.group_commit``).

Values are read from the live objects when scraped; nothing is kept here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OUTCOMES = ("offered", "stored", "shed", "failed")


def _sample(lines: list[str], name: str, kind: str, help_: str, values: Iterable[tuple[str, float]]) -> None:
    lines += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    lines += [f"{name}{labels} {value:g}" for labels, value in values]


def memory_write_counts(workspaces: Iterable[Any]) -> dict[str, int]:
    """Advisory memory writes offered / stored / shed / failed, summed over ``workspaces``."""
    totals = dict.fromkeys(OUTCOMES, 0)
    for ws in workspaces:
        writes = ws.bulkheads.insights.state().get("writes", {})
        for outcome in OUTCOMES:
            totals[outcome] += int(writes.get(outcome, 0))
    return totals


def render(workspaces: Iterable[Any]) -> str:
    workspaces = list(workspaces)
    lines: list[str] = []
    writes = memory_write_counts(workspaces)
    _sample(lines, "baton_memory_writes_total", "counter",
            "Advisory memory writes (insights, learnings, usage counts) offered, and stored, shed by policy or failed.",
            ((f'{{outcome="{o}"}}', writes[o]) for o in OUTCOMES))
    queued = sum(ws.bulkheads.insights.state().get("queued", 0) for ws in workspaces)
    _sample(lines, "baton_memory_advisory_queued", "gauge", "Advisory memory writes waiting or running.", [("", queued)])
    group = {"groups": 0, "committed": 0, "failed": 0}
    for ws in workspaces:
        for key, value in getattr(ws.memory, "write_totals", {}).items():
            group[key] = group.get(key, 0) + value
    _sample(lines, "baton_memory_commits_total", "counter", "Memory group transactions committed.", [("", group["groups"])])
    _sample(lines, "baton_memory_committed_writes_total", "counter", "Memory writes committed in a group transaction.",
            [("", group["committed"])])
    _sample(lines, "baton_memory_failed_writes_total", "counter",
            "Memory writes failed with their group transaction (the database unavailable).", [("", group["failed"])])
    return "\n".join(lines) + "\n"
