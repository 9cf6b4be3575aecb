"""The JSON report: the run, its figures and every question's result, as one file.

It is what ``--baseline`` reads back, so it carries everything the gate needs (each question's
id, status and verdicts) and a version number; a file that is not such a report is a
``ReportError``, not a crash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baton.errors import BatonError
from baton.evaluation.results import EvalRun, QuestionResult
from baton.evaluation.summary import summarise

REPORT_VERSION = 1


class ReportError(BatonError):
    """A report file could not be read back (missing, not JSON, not a ``baton eval`` report)."""


def report_dict(run: EvalRun) -> dict[str, Any]:
    summary = summarise(run.results)
    return {
        "baton_eval": REPORT_VERSION,
        "set": run.set_name,
        "source": run.source,
        "model": run.model,
        "no_model": run.model is None,
        "started_at": run.started_at,
        "duration_s": run.duration_s,
        "concurrency": run.concurrency,
        "budget_usd": run.budget_usd,
        "budget_stopped": run.budget_stopped,
        "notes": list(run.notes),
        "summary": summary.to_dict(),
        "questions": [r.to_dict() for r in run.results],
    }


def write_json(run: EvalRun, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report_dict(run), indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return path


def read_report(path: str | Path) -> EvalRun:
    """A report written by ``write_json``, back as an ``EvalRun``."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"cannot read the report {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path} is not JSON ({exc.msg})") from None
    if not isinstance(raw, dict) or raw.get("baton_eval") != REPORT_VERSION or not isinstance(raw.get("questions"), list):
        raise ReportError(f"{path} is not a baton eval report (version {REPORT_VERSION})")
    try:
        results = [QuestionResult.from_dict(q) for q in raw["questions"]]
    except (TypeError, KeyError, AttributeError) as exc:
        raise ReportError(f"{path}: a question entry is malformed ({exc})") from exc
    return EvalRun(str(raw.get("set") or ""), str(raw.get("source") or ""), results, model=raw.get("model"),
                   started_at=str(raw.get("started_at") or ""), duration_s=float(raw.get("duration_s") or 0.0),
                   concurrency=int(raw.get("concurrency") or 1), budget_usd=raw.get("budget_usd"),
                   budget_stopped=bool(raw.get("budget_stopped")), notes=list(raw.get("notes") or []))
