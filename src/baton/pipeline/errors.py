"""Errors of the pipeline layer.

A malformed plan lists *every* problem at once (the planner feeds the whole list back to the
model in its one repair round, and a person fixing a plan by hand wants them all); a cycle is
a separate type because it is a defect of an otherwise well-formed plan.
"""

from __future__ import annotations

from baton.errors import BatonError


class PipelineError(BatonError):
    """Base of the errors raised by ``baton.pipeline``."""


class PlanValidationError(PipelineError):
    """The plan JSON (or plan object) is malformed. ``problems`` lists every problem found,
    each as one sentence naming the stage or field at fault."""

    def __init__(self, problems: list[str], *, raw: str | None = None) -> None:
        self.problems = list(problems)
        self.raw = raw
        listing = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid execution plan ({len(self.problems)} problem(s)):\n{listing}")


class PlanDefect(PlanValidationError):
    """The plan's ``depends_on`` graph has a cycle. ``cycle`` names the stages in it, in
    dependency order, the first repeated at the end (``["a", "b", "a"]``). It fails the plan
    before anything runs; it never deadlocks a run."""

    def __init__(self, cycle: list[str]) -> None:
        self.cycle = list(cycle)
        super().__init__([f"dependency cycle: {' -> '.join(self.cycle)}"])


class CheckpointDecisionError(PipelineError):
    """A checkpoint decision that cannot be applied: no paused run with that id, an unknown
    action, an edit without a question, or an edit aimed at a stage that already ran."""


class PipelineConfigurationError(PipelineError):
    """A pipeline component is misconfigured (a bad runner factory string, a missing runner,
    an unusable system database URL, a run store's bounds)."""
