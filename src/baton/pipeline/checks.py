"""Stage validation: the row-count and column checks a plan attaches to a stage.

Applied after the stage ran successfully; a failure turns the stage into an error with a
reason a person can act on ("stage 'top' returned 0 rows, at least 1 required"), so the
pipeline reports ``stage_failed`` and skips what depended on it. Column names compare
case-insensitively (engines disagree on the case they report).
"""

from __future__ import annotations

from baton.pipeline.models import PlanStage, StageResult


def validation_problems(stage: PlanStage, result: StageResult) -> list[str]:
    """Every way ``result`` misses ``stage.validation`` (empty when it passes)."""
    rules = stage.validation
    if rules is None or not result.ok:
        return []
    needs_rows = rules.min_rows is not None or rules.max_rows is not None or rules.required_columns
    table = result.query_result
    if table is None:
        return [f"stage {stage.stage_id!r} returned no table, but its validation needs rows"] if needs_rows else []
    problems = []
    rows = table.row_count
    if rules.min_rows is not None and rows < rules.min_rows:
        problems.append(f"stage {stage.stage_id!r} returned {rows} row(s), at least {rules.min_rows} required")
    if rules.max_rows is not None and rows > rules.max_rows:
        problems.append(f"stage {stage.stage_id!r} returned {rows} row(s), at most {rules.max_rows} allowed")
    have = {c.lower() for c in table.columns}
    missing = [c for c in rules.required_columns if c.lower() not in have]
    if missing:
        problems.append(
            f"stage {stage.stage_id!r} is missing required column(s) {', '.join(missing)} "
            f"(it returned: {', '.join(table.columns) or 'no columns'})"
        )
    return problems
