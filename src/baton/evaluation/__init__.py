"""Evaluation: golden questions asked through the Workspace's one answer path, and scored.

``baton eval`` and notebooks use the same parts:

- ``golden`` (JSONL golden sets) and ``importers`` (Spider, BIRD, a workspace's verified
  questions) say what to ask and what a right answer is;
- ``targets`` opens the workspace that answers (one per database) and the read-only
  connection gold queries run on; ``metering`` counts each question's LLM calls, tokens and
  cost at the model;
- ``runner`` asks every question (bounded concurrency, a budget) through
  ``Workspace.answer_stream``; ``judge`` and ``compare`` score each answer; ``summary``
  makes the figures;
- ``report`` (JSON), ``html_report`` (a self-contained page), ``terminal`` (Rich) show them,
  and ``gate`` compares a run with a baseline for CI.

The package is named ``evaluation`` so that nothing shadows Python's ``eval``. Importing it
opens nothing.
"""

from baton.evaluation.compare import Comparison, compare_results, gold_orders
from baton.evaluation.gate import GateResult, Regression, compare_to_baseline
from baton.evaluation.golden import GoldenQuestion, GoldenSet, GoldenSetError, Tolerance, golden_set, load_jsonl
from baton.evaluation.html_report import render_html, write_html
from baton.evaluation.importers import load_bird, load_golden_set, load_spider, verified_questions
from baton.evaluation.metering import Meter, MeteredModel, Price, Prices, Usage
from baton.evaluation.report import ReportError, read_report, report_dict, write_json
from baton.evaluation.results import EvalRun, QuestionResult, Table
from baton.evaluation.runner import RunOptions, run_eval
from baton.evaluation.summary import Summary, summarise
from baton.evaluation.targets import Target, TargetError, Targets, database_target, demo_target, fixed_targets, workspace_target

__all__ = [
    "Comparison", "EvalRun", "GateResult", "GoldenQuestion", "GoldenSet", "GoldenSetError", "Meter", "MeteredModel",
    "Price", "Prices", "QuestionResult", "Regression", "ReportError", "RunOptions", "Summary", "Table", "Target",
    "TargetError", "Targets", "Tolerance", "Usage", "compare_results", "compare_to_baseline", "database_target",
    "demo_target", "fixed_targets", "gold_orders", "golden_set", "load_bird", "load_golden_set", "load_jsonl",
    "load_spider", "read_report", "render_html", "report_dict", "run_eval", "summarise", "verified_questions",
    "workspace_target", "write_html", "write_json",
]
