"""The regression gate: this run against a baseline report, for CI.

The gate compares the two runs on the questions both scored (matched by id; a question
skipped or a gold error in either run is not comparable), so a budget that stopped early or
a golden set that grew does not pass for a drop in quality. It fails when execution accuracy
or routing accuracy on those questions dropped by more than ``max_drop`` (a fraction: 0.02
is two percentage points), and it always names the questions that regressed: passed in
the baseline, failed now, with why.

Decisions (the issue was silent):
- The default tolerance is zero: any drop fails. Runs with a real model vary; CI over such
  runs should set ``--max-drop`` to what it has measured the noise to be.
- A baseline that shares no scored question with this run fails the gate: nothing was
  compared, and a green check would say something was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baton.evaluation.results import EvalRun, QuestionResult


@dataclass(slots=True)
class Regression:
    id: str
    question: str
    reasons: list[str]


@dataclass(slots=True)
class GateResult:
    passed: bool
    compared: int
    regressions: list[Regression] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why it failed, in words
    figures: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)  # metric: (baseline, now)


def _rate(results: list[QuestionResult], attribute: str) -> float | None:
    values = [getattr(r, attribute) for r in results if getattr(r, attribute) is not None]
    return sum(values) / len(values) if values else None


def compare_to_baseline(current: EvalRun, baseline: EvalRun, *, max_drop: float = 0.0) -> GateResult:
    """The gate's verdict (module docstring)."""
    before = {r.id: r for r in baseline.results if r.scored}
    now = {r.id: r for r in current.results if r.scored}
    common = [i for i in before if i in now]
    gate = GateResult(passed=True, compared=len(common))
    if not common:
        gate.passed = False
        gate.problems.append("the baseline shares no scored question with this run: nothing to compare")
        return gate
    for qid in common:
        was, is_ = before[qid], now[qid]
        if was.status == "pass" and is_.status == "fail":
            gate.regressions.append(Regression(qid, is_.question, list(is_.reasons)))
        elif was.status == "fail" and is_.status == "pass":
            gate.improvements.append(qid)
    for metric, attribute in (("execution accuracy", "execution"), ("routing accuracy", "routing")):
        pairs = [(before[i], now[i]) for i in common if getattr(before[i], attribute) is not None and getattr(now[i], attribute) is not None]
        old = _rate([p[0] for p in pairs], attribute)
        new = _rate([p[1] for p in pairs], attribute)
        gate.figures[metric] = (old, new)
        if old is not None and new is not None and old - new > max_drop + 1e-12:
            gate.passed = False
            gate.problems.append(f"{metric} dropped from {old:.1%} to {new:.1%} on {len(pairs)} common questions "
                                 f"(more than the {max_drop:.1%} allowed)")
    return gate
