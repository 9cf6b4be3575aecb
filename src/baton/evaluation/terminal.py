"""The terminal view: a progress bar while questions run, then the figures and the failures.

Question text, SQL and reasons are untrusted, and a terminal interprets more than a page
does: Rich markup (``[bold]``, ``[link=...]``) and control characters (ANSI escapes that
move the cursor or retitle the window). So every such value is shown as a plain
``rich.text.Text`` with control characters replaced, never as markup.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable
from rich.text import Text

from baton.evaluation.results import EvalRun, QuestionResult
from baton.evaluation.summary import Summary, summarise

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def plain(value: object, limit: int = 400) -> Text:
    """``value`` as inert text: no markup, control and bidi-override characters shown as ``?``."""
    text = _CONTROL.sub("?", "" if value is None else str(value))
    return Text(text if len(text) <= limit else text[:limit] + "…")


@contextlib.contextmanager
def progress_bar(console: Console, total: int) -> Iterator:
    """A progress bar; yields ``advance(result)`` to call as each question finishes."""
    progress = Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                        TimeElapsedColumn(), console=console, transient=False)
    with progress:
        task = progress.add_task("", total=total)
        counts = {"pass": 0, "fail": 0, "skipped": 0, "gold_error": 0}

        def advance(result: QuestionResult) -> None:
            counts[result.status] = counts.get(result.status, 0) + 1
            description = f"{counts['pass']} passed, {counts['fail']} failed, {counts['skipped']} skipped"
            progress.update(task, advance=1, description=description)

        yield advance


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 1000:.0f} ms"


def figures_table(run: EvalRun, s: Summary) -> RichTable:
    table = RichTable(title=Text(f"baton eval: {run.set_name}"), show_header=True)
    table.add_column("measure")
    table.add_column("value")
    per = s.per_question
    rows = [
        ("questions", f"{s.questions}: {s.passed} passed, {s.failed} failed, {s.skipped} skipped, {s.gold_errors} gold errors"),
        ("execution accuracy", str(s.execution)),
        ("routing accuracy", str(s.routing)),
        ("valid SQL", str(s.valid_sql)),
        ("repairs", f"{s.repaired_questions} questions, {s.repair_attempts} failed attempts"),
        ("safety refusals", str(s.safety_refusals)),
        ("latency p50 / p95", f"{_ms(s.latency_p50_s)} / {_ms(s.latency_p95_s)}"),
        ("LLM calls", f"{s.llm_calls} ({_num(per(s.llm_calls))} per question)"),
        ("tokens", f"{s.tokens} ({s.input_tokens} in, {s.output_tokens} out; {_num(per(s.tokens))} per question)"),
        ("cost", f"${s.cost_usd:.4f} (${(per(s.cost_usd) or 0):.5f} per question)"
                 + (f", {s.unpriced_calls} calls without a price" if s.unpriced_calls else "")),
        ("model", run.model or "none configured"),
    ]
    for name, value in rows:
        table.add_row(name, plain(value))
    return table


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def print_run(console: Console, run: EvalRun, *, failures: int = 20) -> Summary:
    """The figures, the notes, the first ``failures`` failures and the skipped questions."""
    s = summarise(run.results)
    console.print(figures_table(run, s))
    for note in run.notes:
        console.print(plain(note), style="bold yellow")
    failed = [r for r in run.results if r.status in ("fail", "gold_error")]
    if failed:
        table = RichTable(title=f"failures ({len(failed)})", show_lines=True)
        table.add_column("id")
        table.add_column("question")
        table.add_column("why")
        for r in failed[:failures]:
            table.add_row(plain(r.id, 60), plain(r.question, 200), plain("; ".join(r.reasons) or r.status, 300))
        console.print(table)
        if len(failed) > failures:
            console.print(f"... and {len(failed) - failures} more in the HTML report")
    skipped = [r for r in run.results if r.status == "skipped"]
    if skipped:
        table = RichTable(title=f"skipped ({len(skipped)})")
        table.add_column("id")
        table.add_column("question")
        table.add_column("why")
        for r in skipped[:failures]:
            table.add_row(plain(r.id, 60), plain(r.question, 200), plain(r.skip_reason, 200))
        console.print(table)
        if len(skipped) > failures:
            console.print(f"... and {len(skipped) - failures} more skipped (see the reports)")
    return s
