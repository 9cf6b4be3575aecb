"""Layering a plan: Kahn's algorithm over ``depends_on``.

Everything whose dependencies are satisfied goes into the same layer, so a plan that
declares independent stages gets them run together instead of in list order (seed 002:
"depends_on is a claim the executor has to honour"). A cycle is a plan defect: it raises
``PlanDefect`` naming the stages in the cycle before anything runs, never a deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence

from baton.pipeline.errors import PlanDefect
from baton.pipeline.models import PlanStage


def layers(stages: Sequence[PlanStage]) -> list[list[PlanStage]]:
    by_id = {s.stage_id: s for s in stages}
    order = {s.stage_id: i for i, s in enumerate(stages)}
    waiting_on = {s.stage_id: {d for d in s.depends_on if d in by_id} for s in stages}
    dependents: dict[str, list[str]] = {sid: [] for sid in by_id}
    for sid, deps in waiting_on.items():
        for dep in deps:
            dependents[dep].append(sid)

    result: list[list[PlanStage]] = []
    ready = sorted((sid for sid, deps in waiting_on.items() if not deps), key=order.__getitem__)
    placed = 0
    while ready:
        result.append([by_id[sid] for sid in ready])
        placed += len(ready)
        next_ready = []
        for sid in ready:
            for child in dependents[sid]:
                waiting_on[child].discard(sid)
                if not waiting_on[child]:
                    next_ready.append(child)
        ready = sorted(set(next_ready), key=order.__getitem__)
    if placed != len(by_id):
        raise PlanDefect(find_cycle({sid: deps for sid, deps in waiting_on.items() if deps}, order))
    return result


def find_cycle(edges: dict[str, set[str]], order: dict[str, int]) -> list[str]:
    """One cycle among the stages Kahn's algorithm could not place (each still waits on
    another unplaced stage, so walking ``depends_on`` from any of them must revisit one)."""
    start = min(edges, key=order.__getitem__)
    path: list[str] = []
    seen: dict[str, int] = {}
    node = start
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = min((d for d in edges[node] if d in edges), key=order.__getitem__)
    return path[seen[node]:] + [node]
