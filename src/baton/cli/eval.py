"""``baton eval``: ask a golden set through the workspace's answer path and score it.

Exit status: 0 when the run finished (and passed ``--baseline`` / ``--fail-under`` when
given); 1 when the gate failed (accuracy dropped against the baseline, or is under
``--fail-under``); 2 for a configuration error (an unreadable golden set or baseline, a bad
model string, a budget without a price).

The questions: the golden set given (else the workspace's verified questions), and the
verified questions kept in the workspace's own state (saved from the page or by ``baton
verified add``), which the throwaway state the run answers on does not hold; ``--no-verified``
leaves those out.

The command builds the workspaces itself (``baton.evaluation.targets``) so that the model is
metered; it answers nothing on its own: every question goes through
``Workspace.answer_stream``.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

console = Console()


def _fail(message: str) -> typer.Exit:
    from baton.evaluation.terminal import plain

    console.print(plain(message), style="red")
    return typer.Exit(2)


@contextlib.contextmanager
def _eval_state(url: str | None):
    """``--state home``: the configured state (``BATON_STATE_URL``, else ``BATON_HOME``);
    ``--state URL``: that PostgreSQL state; otherwise a throwaway state in a temporary
    folder (targets.py)."""
    from baton.cli.main_commands import _state
    from baton.state.location import State

    if url:
        yield _state(None if url == "home" else url)
        return
    with tempfile.TemporaryDirectory(prefix="baton-eval-") as home:
        yield State.from_env(env={}, home=home)


def _kept_verified(database: str | None, state_url: str | None, privileged: bool) -> Any:
    """A function reading the verified questions kept in the workspace's own state (the
    configured one: ``--state URL``, else ``BATON_STATE_URL``, else ``BATON_HOME``), which is
    not the throwaway state the run answers on by default: the questions people saved from the
    page or with ``baton verified add`` are asked too, and answered as that workspace answers
    them (``install_kept``). The same workspace ``baton verified`` manages; nothing is built
    or created for an embedded state that holds none. Returns (golden set, verified questions)."""

    def read() -> Any:
        from baton.cli.main_commands import _state
        from baton.cli.verified import _workspace
        from baton.demo.verified import VERIFIED_QUESTIONS
        from baton.evaluation import verified_questions
        from baton.evaluation.golden import GoldenSet
        from baton.state.location import MEMORY_FILE, State
        from baton.verified import content_words
        from baton.workspace.database import database_workspace_id
        from baton.workspace.verified import current_verified

        where = State.from_env(url=state_url)
        folder = where.home / ("workspaces/" + database_workspace_id(database) if database else "demo")
        if where.embedded and not (folder / MEMORY_FILE).exists():
            return None
        _state(state_url)  # checked (versions, BATON_HOME) before anything is opened on it

        async def collect() -> Any:
            async with _workspace(database, state_url, privileged=privileged) as ws:
                builtins = {(content_words(v.question), " ".join(v.sql.split())) for v in (() if database else VERIFIED_QUESTIONS)}
                stored = [v for v in current_verified(ws)  # saved ones: the demo's built-in ones come with its code
                          if (content_words(v.question), " ".join(v.sql.split())) not in builtins]
                words = {content_words(v.question) for v in stored}
                every = verified_questions(ws)
                questions = [q for q in every.questions if content_words(q.question) in words]
                return GoldenSet(every.name, questions, source=every.source), stored

        return asyncio.run(collect())

    return read


def install_kept(ws: Any, kept: Any) -> None:
    """``kept``'s verified questions installed in the workspace the run answers with (the
    throwaway state has only the built-in ones), so each is answered as the workspace it was
    saved in answers it; their usage is not counted in the other state's records."""
    from dataclasses import replace

    from baton.verified import content_words
    from baton.workspace.verified import install_verified, installed

    present = installed(ws)
    known = {content_words(v.question) for v in present}
    added = [replace(v, record_id="") for v in kept if content_words(v.question) not in known]
    if added:
        install_verified(ws, [*present, *added])


def with_questions(golden_set: Any, kept: Any) -> Any:
    """``golden_set`` and those of ``kept``'s questions it does not ask yet (the same content
    words: "What was revenue in 2025?" and "what was revenue in 2025" are one question)."""
    from baton.evaluation.golden import GoldenSet
    from baton.verified import content_words

    if kept is None:
        return golden_set
    asked = {content_words(q.question) for q in golden_set.questions}
    ids = {q.id for q in golden_set.questions}
    added = [q for q in kept.questions if content_words(q.question) not in asked and q.id not in ids]
    if not added:
        return golden_set
    return GoldenSet(golden_set.name, [*golden_set.questions, *added], source=f"{golden_set.source} + {kept.source} (kept)")


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_command(
        golden: Path | None = typer.Argument(
            None, help="A golden set: .jsonl, or a Spider/BIRD dev .json. Omitted: the workspace's verified questions."),
        database: str | None = typer.Option(None, help="Answer with a workspace over this database URL (default: the demo)."),
        databases: Path | None = typer.Option(None, help="Spider/BIRD: the folder holding <db_id>/<db_id>.sqlite (default: beside the file)."),
        concurrency: int = typer.Option(4, min=1, help="Questions answered at the same time."),
        budget_usd: float | None = typer.Option(None, "--budget-usd", min=0.0, help="Stop scheduling questions once the run has cost this much (needs a price)."),
        price: str | None = typer.Option(None, help="USD per million input,output tokens for every model, e.g. 0.15,0.60 (per model: $BATON_MODEL_PRICES)."),
        baseline: Path | None = typer.Option(None, help="A previous report.json: exit 1 when accuracy drops more than --max-drop."),
        max_drop: float = typer.Option(0.0, min=0.0, help="Percentage points accuracy may drop against --baseline."),
        fail_under: float | None = typer.Option(None, min=0.0, max=100.0, help="Exit 1 when execution accuracy is under this percentage."),
        tolerance: float | None = typer.Option(None, min=0.0, help="Absolute tolerance for numbers, for questions that give none."),
        timeout: float = typer.Option(300.0, min=1.0, help="Seconds one question may take."),
        limit: int | None = typer.Option(None, min=1, help="Only the first N questions."),
        tag: list[str] | None = typer.Option(None, help="Only questions with this tag (repeatable)."),
        out: Path = typer.Option(Path("baton-eval"), help="Folder for report.json and report.html."),
        state: str | None = typer.Option(None, "--state", help="Evaluate on a real state, memory included: 'home' (BATON_STATE_URL, else BATON_HOME) or a PostgreSQL URL. Default: a throwaway one."),
        unsafe_allow_privileged_role: bool = typer.Option(
            False, "--unsafe-allow-privileged-role", help="Run model-written SQL even if the --database role is privileged."),
        semantic: Path | None = typer.Option(None, "--semantic", help="A semantic model of the database (Baton YAML or dbt MetricFlow): metric questions answered from it."),
        verified: bool = typer.Option(True, "--verified/--no-verified", help="Also ask the verified questions kept in the workspace's state "
                                      "(saved from the page or by `baton verified add`; BATON_STATE_URL, else BATON_HOME). --no-verified: the golden set only."),
    ) -> None:
        """Ask every question of a golden set through the workspace and score the answers:
        execution and routing accuracy, valid SQL, repairs, safety refusals, latency, LLM
        calls, tokens and cost. Writes report.json and report.html."""
        from baton.cli.db import unsafe_privileged_role_opt_in
        from baton.cli.main_commands import _model
        from baton.errors import ConfigurationError
        from baton.evaluation import (
            GoldenSetError,
            Meter,
            Prices,
            ReportError,
            RunOptions,
            Tolerance,
            load_golden_set,
            read_report,
        )

        privileged = unsafe_privileged_role_opt_in(unsafe_allow_privileged_role)
        if golden is None and not verified:
            raise _fail("--no-verified leaves nothing to evaluate: give a golden set")
        try:
            golden_set = load_golden_set(golden, databases=databases) if golden is not None else None
            base = read_report(baseline) if baseline is not None else None
            prices = Prices.from_env(price)
            options = RunOptions(concurrency=concurrency, budget_usd=budget_usd, timeout_s=timeout,
                                 tolerance=Tolerance.parse(tolerance) if tolerance is not None else Tolerance())
        except (GoldenSetError, ReportError, ConfigurationError) as exc:
            raise _fail(str(exc)) from exc
        try:  # the reports' folder, before any question is asked (not a traceback at the end of the run)
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _fail(f"--out {out}: cannot create that folder ({exc.strerror or exc})") from None
        from baton.cli.main_commands import _semantic_file

        semantic = _semantic_file(semantic)
        model = _model()
        if budget_usd is not None and model is not None and prices.price_for(model.provider, model.model) is None:
            raise _fail(f"--budget-usd needs the price of {model.provider}:{model.model}: pass --price IN,OUT "
                        "(USD per million tokens) or set BATON_MODEL_PRICES")
        meter = Meter(prices)
        settings = dict(database=database, privileged=privileged, limit=limit, tags=tag or [], out=out, base=base,
                        max_drop=max_drop / 100, fail_under=fail_under, semantic=semantic,
                        kept=_kept_verified(database, None if state in (None, "home") else state, privileged) if verified else None)
        with _eval_state(state) as where:
            code = asyncio.run(_run(golden_set, meter.wrap(model), meter, options, where, settings))
        raise typer.Exit(code)


async def _run(golden_set: Any, model: Any, meter: Any, options: Any, state: Any, settings: dict[str, Any]) -> int:
    from baton.evaluation import (
        Targets,
        compare_to_baseline,
        database_target,
        demo_target,
        run_eval,
        verified_questions,
        write_html,
        write_json,
    )
    from baton.evaluation.golden import GoldenSet
    from baton.evaluation.terminal import plain, print_run, progress_bar

    default_url, privileged = settings["database"], settings["privileged"]

    async def opener(database: str | None):
        semantic = settings.get("semantic")  # --semantic FILE (baton.semantic)
        if database is None and default_url is None:
            return await asyncio.to_thread(demo_target, state, model, semantic=semantic)
        return await asyncio.to_thread(database_target, database or default_url, state, model, allow_privileged_role=privileged,
                                       semantic=semantic)

    async with Targets(opener) as targets:
        if golden_set is None:
            try:
                target = await targets.get(None)
            except Exception as exc:
                console.print(plain(str(exc)), style="red")
                return 2
            golden_set = await asyncio.to_thread(verified_questions, target.workspace)
        if settings["kept"] is not None:  # the verified questions kept in the workspace's own state, not yet in the set
            try:
                kept = await asyncio.to_thread(settings["kept"])
                if kept is not None:
                    install_kept((await targets.get(None)).workspace, kept[1])
            except Exception as exc:
                console.print(plain(f"cannot read the verified questions kept in the workspace's state: {exc}"), style="red")
                return 2
            golden_set = with_questions(golden_set, kept[0] if kept is not None else None)
        if not golden_set.questions:
            console.print("This workspace has no verified questions to evaluate: confirm answers (feedback), save verified "
                          "questions (`baton verified add`) or give a golden set.", style="red")
            return 2
        questions = [q for q in golden_set.questions if not settings["tags"] or set(settings["tags"]) & set(q.tags)]
        questions = questions[: settings["limit"]] if settings["limit"] else questions
        if not questions:
            console.print("No question of the set matches --tag.", style="red")
            return 2
        chosen = GoldenSet(golden_set.name, questions, source=golden_set.source)
        console.print(plain(f"Evaluating {len(chosen)} question(s) of {chosen.name} ({chosen.source}), concurrency {options.concurrency}"))
        with progress_bar(console, len(chosen)) as advance:
            run = await run_eval(chosen, targets, meter=meter, options=options, on_result=advance)
    summary = print_run(console, run)
    out: Path = settings["out"]
    json_path, html_path = write_json(run, out / "report.json"), write_html(run, out / "report.html")
    console.print(plain(f"Reports: {json_path}  {html_path}"))
    code = 0
    if settings["base"] is not None:
        gate = compare_to_baseline(run, settings["base"], max_drop=settings["max_drop"])
        for regression in gate.regressions:
            console.print(plain(f"regressed: {regression.id}: {regression.question} ({'; '.join(regression.reasons)})"), style="red")
        for problem in gate.problems:
            console.print(plain(f"gate: {problem}"), style="bold red")
        if gate.passed:
            console.print(plain(f"gate: passed against the baseline ({gate.compared} questions compared)"), style="green")
        else:
            code = 1
    threshold = settings["fail_under"]
    if threshold is not None:
        accuracy = summary.execution.value
        if accuracy is None or accuracy * 100 < threshold:
            console.print(plain(f"gate: execution accuracy {summary.execution} is under {threshold:g}%"), style="bold red")
            code = 1
    return code
