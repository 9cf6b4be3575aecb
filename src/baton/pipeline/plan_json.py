"""Strict plan parsing: JSON in, a validated plan's question and stages out (``ExecutionPlan``
builds itself from them, ``baton.pipeline.plan``), or every problem at once.

A plan usually comes from an LLM, so it is untrusted input. Nothing is coerced silently: a
field of the wrong type, an unknown field (often a misspelt one, ``depends`` for
``depends_on``), a missing or duplicate ``stage_id``, a dependency on a stage that does not
exist, an unknown tool, an ``analyze_results`` stage with nothing to analyze, contradictory
row limits: each is one line in ``PlanValidationError.problems``. A cycle is checked last,
only on an otherwise valid plan, and raises ``PlanDefect``.

Two bounds beyond the seed. A ``stage_id`` is an identifier (a letter or ``_``, then letters,
digits or ``_``, at most 64 characters), because ``analyze_results`` exposes each
dependency's table under its stage id to SQL written by a model, and it names DBOS steps and
events. A plan has at most ``MAX_STAGES`` stages (``max_stages=`` raises or lowers it): a
model's runaway plan is refused before any stage is parsed, and every run cost stays small.

Plans built in code get the same field checks (``ExecutionPlan.validate``): a wrong type
there is a ``PlanValidationError`` too, never an ``AttributeError`` halfway through a run.

This module knows stages, not ``ExecutionPlan``: the plan calls it, never the other way round.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any

from baton.pipeline.errors import PlanValidationError
from baton.pipeline.graph import layers
from baton.pipeline.models import ANALYZE_RESULTS, STAGE_TOOLS, PlanStage, StageValidation

ParsedPlan = tuple[str, list[PlanStage]]

_PLAN_FIELDS = {"question", "stages"}
_STAGE_FIELDS = {
    "stage_id", "tool", "question", "description", "depends_on", "checkpoint",
    "validation", "join_on", "compare",
}
_REQUIRED_STAGE_FIELDS = ("stage_id", "tool", "question")
_VALIDATION_FIELDS = {"min_rows", "max_rows", "required_columns"}
_STAGE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_STAGES = 64
"""The most stages a plan may have unless ``max_stages=`` says otherwise."""


def plan_from_json(raw: str | bytes, *, tools: Sequence[str] = STAGE_TOOLS, max_stages: int = MAX_STAGES) -> ParsedPlan:
    """(question, stages) of a plan given as JSON text, checked (``check_plan``)."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise PlanValidationError([f"plan is not valid JSON: {exc}"], raw=_text(raw)) from None
    try:
        return plan_from_data(data, tools=tools, max_stages=max_stages)
    except PlanValidationError as exc:
        exc.raw = _text(raw)
        raise


def plan_from_data(data: Any, *, tools: Sequence[str] = STAGE_TOOLS, max_stages: int = MAX_STAGES) -> ParsedPlan:
    """(question, stages) of a plan given as parsed JSON, checked (``check_plan``)."""
    problems: list[str] = []
    if not isinstance(data, dict):
        raise PlanValidationError([f"plan must be a JSON object, got {_type(data)}"])
    for name in sorted(set(data) - _PLAN_FIELDS):
        problems.append(f"plan: unknown field {name!r} (allowed: question, stages)")
    question = data.get("question", "")
    if not isinstance(question, str):
        problems.append(f"plan: 'question' must be a string, got {_type(question)}")
        question = ""
    raw_stages = data.get("stages")
    stages: list[PlanStage] = []
    if raw_stages is None:
        problems.append("plan: missing field 'stages'")
    elif not isinstance(raw_stages, list):
        problems.append(f"plan: 'stages' must be a list, got {_type(raw_stages)}")
    elif len(raw_stages) > max_stages:
        problems.append(f"plan: has {len(raw_stages)} stages, at most {max_stages} allowed")
    else:
        for index, raw_stage in enumerate(raw_stages):
            stage = _stage(raw_stage, index, problems)
            if stage is not None:
                stages.append(stage)
    if problems:
        raise PlanValidationError(problems)
    check_plan(question, stages, tools=tools, max_stages=max_stages)
    return question, stages


def check_plan(question: Any, stages: Any, *, tools: Sequence[str] = STAGE_TOOLS, max_stages: int = MAX_STAGES) -> None:
    """Field types (for plans built in code), then cross-stage checks (ids, dependencies,
    tools, limits), then the cycle check."""
    problems = _shape_problems(question, stages)
    if problems:
        raise PlanValidationError(problems)
    if not stages:
        problems.append("plan: has no stages")
    if len(stages) > max_stages:
        problems.append(f"plan: has {len(stages)} stages, at most {max_stages} allowed")
    seen: set[str] = set()
    ids = {s.stage_id for s in stages}
    for stage in stages:
        where = f"stage {stage.stage_id!r}"
        if not _STAGE_ID.fullmatch(stage.stage_id):
            problems.append(
                f"{where}: 'stage_id' must be an identifier (a letter or _, then letters, digits or _; "
                "at most 64 characters): it names the stage's table for analyze_results"
            )
        elif stage.stage_id in seen:
            problems.append(f"{where}: duplicate stage_id")
        seen.add(stage.stage_id)
        if stage.tool not in tools:
            problems.append(f"{where}: unknown tool {stage.tool!r} (known: {', '.join(tools)})")
        if not stage.question.strip():
            problems.append(f"{where}: empty 'question'")
        for dep in stage.depends_on:
            if dep == stage.stage_id:
                problems.append(f"{where}: depends on itself")
            elif dep not in ids:
                problems.append(f"{where}: depends on unknown stage {dep!r}")
        if len(set(stage.depends_on)) != len(stage.depends_on):
            problems.append(f"{where}: lists a dependency twice")
        if stage.tool == ANALYZE_RESULTS and not stage.depends_on:
            problems.append(f"{where}: analyze_results needs at least one stage in depends_on to analyze")
        v = stage.validation
        if v is not None:
            for name in ("min_rows", "max_rows"):
                value = getattr(v, name)
                if value is not None and value < 0:
                    problems.append(f"{where}: validation.{name} must be >= 0, got {value}")
            if v.min_rows is not None and v.max_rows is not None and v.min_rows > v.max_rows:
                problems.append(f"{where}: validation.min_rows ({v.min_rows}) > max_rows ({v.max_rows})")
    if problems:
        raise PlanValidationError(problems)
    layers(stages)  # raises PlanDefect on a cycle


def _shape_problems(question: Any, stages: Any) -> list[str]:
    """The JSON field checks, applied to a plan's parts (the plan may have been built in code)."""
    problems: list[str] = []
    if not isinstance(question, str):
        problems.append(f"plan: 'question' must be a string, got {_type(question)}")
    if not isinstance(stages, list):
        return [*problems, f"plan: 'stages' must be a list, got {_type(stages)}"]
    for index, stage in enumerate(stages):
        if not isinstance(stage, PlanStage):
            problems.append(f"stages[{index}]: must be a PlanStage, got {type(stage).__name__}")
            continue
        raw = {f.name: getattr(stage, f.name) for f in dataclasses.fields(stage)}
        if isinstance(stage.validation, StageValidation):
            raw["validation"] = {f.name: getattr(stage.validation, f.name) for f in dataclasses.fields(stage.validation)}
        elif stage.validation is not None:
            problems.append(f"stages[{index}]: 'validation' must be a StageValidation, got {type(stage.validation).__name__}")
            raw["validation"] = None
        _stage(raw, index, problems)
    return problems


def _stage(raw: Any, index: int, problems: list[str]) -> PlanStage | None:
    if not isinstance(raw, dict):
        problems.append(f"stages[{index}]: must be an object, got {_type(raw)}")
        return None
    label = raw.get("stage_id")
    where = f"stage {label!r}" if isinstance(label, str) and label else f"stages[{index}]"
    before = len(problems)
    for name in sorted(set(raw) - _STAGE_FIELDS):
        problems.append(f"{where}: unknown field {name!r}")
    for name in _REQUIRED_STAGE_FIELDS:
        if name not in raw:
            problems.append(f"{where}: missing field {name!r}")
        elif not isinstance(raw[name], str):
            problems.append(f"{where}: {name!r} must be a string, got {_type(raw[name])}")
    description = raw.get("description", "")
    if not isinstance(description, str):
        problems.append(f"{where}: 'description' must be a string, got {_type(description)}")
    checkpoint = raw.get("checkpoint", False)
    if not isinstance(checkpoint, bool):
        problems.append(f"{where}: 'checkpoint' must be true or false, got {_type(checkpoint)}")
    lists = {name: _str_list(raw.get(name, []), f"{where}: {name!r}", problems) for name in ("depends_on", "join_on", "compare")}
    validation = _validation(raw.get("validation"), where, problems)
    if len(problems) != before:
        return None
    return PlanStage(
        stage_id=raw["stage_id"], tool=raw["tool"], question=raw["question"],
        description=description, checkpoint=checkpoint, validation=validation, **lists,
    )


def _validation(raw: Any, where: str, problems: list[str]) -> StageValidation | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"{where}: 'validation' must be an object, got {_type(raw)}")
        return None
    for name in sorted(set(raw) - _VALIDATION_FIELDS):
        problems.append(f"{where}: unknown validation field {name!r} (allowed: min_rows, max_rows, required_columns)")
    limits: dict[str, int | None] = {}
    for name in ("min_rows", "max_rows"):
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            problems.append(f"{where}: validation.{name} must be an integer, got {_type(value)}")
            value = None
        limits[name] = value
    columns = _str_list(raw.get("required_columns", []), f"{where}: validation.required_columns", problems)
    return StageValidation(required_columns=columns, **limits)


def _str_list(value: Any, label: str, problems: list[str]) -> list[str]:
    if not isinstance(value, list):
        problems.append(f"{label} must be a list of strings, got {_type(value)}")
        return []
    wrong = [v for v in value if not isinstance(v, str)]
    if wrong:
        problems.append(f"{label} must be a list of strings, got an item of type {_type(wrong[0])}")
        return []
    return list(value)


def _type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object"}.get(type(value), type(value).__name__)


def _text(raw: str | bytes) -> str:
    return raw.decode(errors="replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
