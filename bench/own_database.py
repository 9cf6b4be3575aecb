"""Your own database, without a model (issue 28): plain questions answered from `baton semantic init`'s draft.

    .venv/bin/python bench/own_database.py [--database shop|chinook|northwind|all] [--engines postgres,mysql,duckdb]
                                           [--checklist] [--verbose] [--show-draft] [--model FILE]
                                           [--questions main|heldout] [--wrong-file FILE]

For each database (``tests/own_database_fixtures.py``: **shop**, ours, on PostgreSQL, MariaDB
and DuckDB; **chinook**, public, on PostgreSQL), on a fresh copy:

1. ``baton semantic init --database URL --out FILE`` is run as a user runs it (a subprocess,
   as the least-privilege reader role ``baton db grant`` makes; DuckDB: the file), and what
   it prints is kept: the draft's **checklist** is read from it (``checklist_items``);
2. the draft, unedited, is attached to a workspace over the same URL with **no model**
   (``open_database_workspace(url, None, semantic=FILE)``: the path of ``baton ask
   --database URL --semantic FILE``), and each question of
   ``tests/fixtures/own_database/<db>_questions.yaml`` is asked through ``Workspace.answer``;
3. with ``--checklist``, the draft edited by ``apply_checklist`` (only what the printed
   checklist says) is asked again.

``--questions heldout`` asks the held-out sets instead (``<db>_heldout.yaml``: written from the
schemas and comments only, by someone who had read neither the first sets nor the parser, so
nothing was fitted to them; and a third database, **northwind**, public, on PostgreSQL, with
held-out questions only) and writes every wrong answer, with its semantic query and gold
SQL, to ``--wrong-file`` (default ``/tmp/heldout_wrong.md``, overwritten on each run).

Each answer is classified against the gold rows (the gold SQL run on the same copy, as the
administrator): **right** (a table with exactly the gold rows: order ignored unless the
question ranks, numbers within half a cent, column names ignored), **wrong** (a table with
other rows: a confident wrong answer), **asked back** (an ask-back, a refusal, an error or
the no-model fallback: no table). Targets: >= 75 % right and 0 wrong unedited; >= 90 % right
and 0 wrong after the checklist. Prints per database and engine the counts, the % right, every
wrong answer (with the semantic query that produced it), and the time per question.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import yaml

from own_database_checklist import DECLINED, apply_checklist, checklist_items
from own_database_fixtures import build_chinook, build_northwind, build_shop, fresh_mysql_database, load_questions, run_gold
from semantic_gold import rows_match

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))
TARGETS = {"draft": 0.75, "checklist": 0.90}


@dataclass
class Score:
    label: str
    right: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    asked_back: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # counted as asked back (no table), listed apart
    wrong_cases: list[tuple[Any, str, str, str]] = field(default_factory=list)  # (case, semantic query, got, gold)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return len(self.right) + len(self.wrong) + len(self.asked_back) + len(self.errors)

    def met(self, target: float) -> bool:
        return not self.wrong and len(self.right) >= target * self.total


# --- one database on one engine ------------------------------------------------------------------

def baton_command() -> list[str]:
    script = Path(sys.executable).with_name("baton")
    return [str(script)] if script.exists() else [sys.executable, "-m", "baton.cli"]


def draft_with_cli(url: str, out: Path, privileged: bool) -> tuple[int, str, Path | None]:
    """``baton semantic init --database URL --out FILE [--checklist-json FILE]``: its exit status,
    everything it printed, and the checklist file (None where this Baton has no such option)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "BATON_LLM", "BATON_MODEL"))}
    env["PYTHONPATH"] = os.pathsep.join([SRC, *filter(None, [env.get("PYTHONPATH")])])  # the same Baton as the bench's
    checklist: Path | None = out.with_suffix(".checklist.json")
    while True:
        command = [*baton_command(), "semantic", "init", "--database", url, "--out", str(out)]
        command += ["--unsafe-allow-privileged-role"] if privileged else []
        command += ["--checklist-json", str(checklist)] if checklist else []
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        printed = (done.stdout + "\n" + done.stderr).strip()
        if checklist is not None and done.returncode == 2 and "--checklist-json" in printed:
            checklist = None  # an older `semantic init`: the printed checklist only
            continue
        return done.returncode, printed, checklist


async def ask_all(url: str, model_file: Path, home: Path, cases: list, gold: dict[str, list], label: str,
                  privileged: bool) -> Score:
    from baton.state.location import State
    from baton.workspace.database import open_database_workspace

    score = Score(label)
    ws = open_database_workspace(url, None, state=State.from_env({}, home=home), semantic=model_file,
                                 allow_privileged_role=privileged, name=f"bench_{home.name}")
    async with ws:
        started = time.perf_counter()
        for case in cases:
            try:
                answer = await ws.answer(case.question)
            except Exception as exc:  # a crash is a finding, not the end of the run
                score.errors.append(f"{case.question!r}: {type(exc).__name__}: {exc}")
                continue
            expected = gold[case.question]
            said = answer.metadata.get("semantic_query")
            if answer.results is not None and answer.data is not None:
                if rows_match(answer.results.rows, expected, ordered=case.ordered):
                    score.right.append(case.question)
                else:
                    score.wrong.append(f"{case.question!r}: got {_short(answer.results.rows)} expected {_short(expected)} "
                                       f"(semantic query: {said}; agent: {answer.metadata.get('agent')})")
                    score.wrong_cases.append((case, str(said), _short(answer.results.rows), _short(expected)))
            elif answer.error:
                score.errors.append(f"{case.question!r}: {answer.error}")
            else:
                first = (answer.content or "").strip().splitlines()[0:1]
                score.asked_back.append(f"{case.question!r}: {first[0][:140] if first else ''} "
                                        f"{list(answer.suggested_followups or [])[:3]}")
        score.seconds = time.perf_counter() - started
    return score


def _short(rows: Any) -> str:
    rows = [list(r) for r in rows]
    return f"{rows[:3]}{' ...' if len(rows) > 3 else ''} ({len(rows)} rows)"


@contextlib.contextmanager
def database_copy(database: str, engine: str, tmp: Path):
    """A fresh copy (admin target, URL Baton reads it through, privileged?), dropped afterwards."""
    from least_privilege import create_reader_role, drop_reader_role
    from pg_fresh import fresh_database

    if engine == "duckdb":
        path = tmp / f"{database}.duckdb"
        build_shop("duckdb", str(path))
        yield str(path), f"duckdb:///{path}", False
        return
    server = os.environ.get("BATON_TEST_POSTGRES_URL" if engine == "postgres" else "BATON_TEST_MYSQL_URL")
    if not server:
        raise SystemExit(f"{engine}: set BATON_TEST_{'POSTGRES' if engine == 'postgres' else 'MYSQL'}_URL")
    fresh = fresh_database(server, prefix="baton_own_bench") if engine == "postgres" else fresh_mysql_database(server, "baton_own_bench")
    with fresh as admin:
        if database in ("chinook", "northwind"):
            (build_chinook if database == "chinook" else build_northwind)(admin)
        else:
            build_shop(engine, admin)
        import sqlalchemy as sa

        schema = "public" if engine == "postgres" else sa.make_url(admin).database
        try:
            reader = create_reader_role(admin, schema, prefix="baton_own_reader")
        except Exception as exc:  # the grants could not be applied here: read as the administrator, said
            print(f"  ({engine}: no reader role ({type(exc).__name__}: {exc}); reading as the administrator)")
            yield admin, admin, True
            return
        try:
            yield admin, reader.url, False
        finally:
            drop_reader_role(reader)


async def run_copy(database: str, engine: str, args: argparse.Namespace) -> list[Score]:
    cases = load_questions(database, held_out=args.questions == "heldout")
    with tempfile.TemporaryDirectory() as tmp_name, database_copy(database, engine, Path(tmp_name)) as (admin, url, privileged):
        tmp = Path(tmp_name)
        gold = {case.question: run_gold(engine, admin, case.gold_sql(engine)) for case in cases}
        draft_file = tmp / "draft.yaml"
        started = time.perf_counter()
        checklist_file = None
        if args.model:  # a model of the caller's instead of the draft (checking a hand edit, or this harness)
            status, printed = 0, ""
            draft_file.write_text(Path(args.model).read_text(encoding="utf-8"), encoding="utf-8")
        else:
            status, printed, checklist_file = draft_with_cli(url, draft_file, privileged)
        drafted = time.perf_counter() - started
        if status != 0 or not draft_file.exists():
            print(f"\n{database} on {engine}: `baton semantic init` failed (exit {status}):\n{printed}")
            return []
        draft = yaml.safe_load(draft_file.read_text(encoding="utf-8"))
        items = checklist_items(printed, checklist_file)
        print(f"\n{database} on {engine}: {'model given' if args.model else f'draft in {drafted:.1f} s'}: {len(draft.get('entities', []))} entities, "
              f"{len(draft.get('metrics', []))} metrics, {len(draft.get('dimensions', []))} dimensions; "
              f"checklist printed: {len(items)} item(s)")
        if args.show_draft:
            print(printed)
            print(draft_file.read_text(encoding="utf-8"))
        first = "given model" if args.model else "draft, no edits"
        scores = [await ask_all(url, draft_file, tmp / "draft_home", cases, gold, first, privileged)]
        if args.checklist:
            declined = DECLINED.get(database, {})
            edited, applied = apply_checklist(yaml.safe_load(draft_file.read_text(encoding="utf-8")), items, declined)
            edited_file = tmp / "edited.yaml"
            edited_file.write_text(yaml.safe_dump(edited, sort_keys=False, allow_unicode=True), encoding="utf-8")
            print(f"  checklist: {len(applied)} of {len(items)} item(s) applied (the others carry no edit or are declined)")
            for item in items:
                mark = "x" if item in applied else "declined" if (item.kind, item.target) in declined else " "
                why = f"  <- {declined[(item.kind, item.target)]}" if mark == "declined" else ""
                print(f"    [{mark}] {item.line[6:] if item.line.startswith('- [ ] ') else item.line}{why}")
            scores.append(await ask_all(url, edited_file, tmp / "edited_home", cases, gold, "after the checklist", privileged))
        for score in scores:
            report(database, engine, score, args.verbose)
        return scores


def report(database: str, engine: str, score: Score, verbose: bool) -> None:
    target = TARGETS["checklist" if score.label.startswith("after") else "draft"]
    per = score.seconds / max(score.total, 1) * 1000
    print(f"  {score.label}: right {len(score.right)}/{score.total} = {len(score.right) / max(score.total, 1):.1%} "
          f"(target >= {target:.0%}), wrong {len(score.wrong)} (target 0), asked back {len(score.asked_back) + len(score.errors)} "
          f"(of which errors {len(score.errors)}); {per:.0f} ms per question")
    for line in score.wrong:
        print(f"    WRONG {line}")
    for line in score.errors:
        print(f"    ERROR {line}")
    for line in score.asked_back if verbose else []:
        print(f"    asked back {line}")
    for line in score.right if verbose else []:
        print(f"    right {line!r}")


async def run(args: argparse.Namespace) -> int:
    import logging

    logging.disable(logging.WARNING)
    plan = []
    every = ["shop", "chinook"] + (["northwind"] if args.questions == "heldout" else [])  # northwind: held-out questions only
    for database in (every if args.database == "all" else [args.database]):
        if database == "northwind" and args.questions != "heldout":
            raise SystemExit("northwind has held-out questions only: add --questions heldout")
        engines = [e for e in args.engines.split(",") if e] if database == "shop" else ["postgres"]
        plan += [(database, engine) for engine in engines]
    scores = []
    for database, engine in plan:
        scores += [(database, engine, s) for s in await run_copy(database, engine, args)]
    print("\nsummary (right / wrong / asked back of each set):")
    for database, engine, s in scores:
        print(f"  {database:8} {engine:9} {s.label:20} {len(s.right):3} / {len(s.wrong):2} / {len(s.asked_back) + len(s.errors):3}"
              f" of {s.total}: {len(s.right) / max(s.total, 1):6.1%}")
    wrong_file = args.wrong_file or ("/tmp/heldout_wrong.md" if args.questions == "heldout" else None)
    if wrong_file:
        write_wrong(Path(wrong_file), args, scores)
        print(f"wrong answers written to {wrong_file}")
    ok = len(scores) > 0 and all(s.met(TARGETS["checklist" if s.label.startswith("after") else "draft"]) for _, _, s in scores)
    return 0 if ok else 1


def write_wrong(path: Path, args: argparse.Namespace, scores: list[tuple[str, str, Score]]) -> None:
    """Every wrong answer of this run (question, the semantic query Baton chose, its rows, the
    gold rows and SQL) as Markdown, for whoever works on the draft and the parser."""
    lines = [f"# Wrong answers: bench/own_database.py --questions {args.questions}"
             f"{' --checklist' if args.checklist else ''} --database {args.database}", "",
             "A wrong answer is a table whose rows are not the gold rows: a confident wrong number.", ""]
    for database, engine, s in scores:
        lines.append(f"## {database} on {engine}, {s.label}: right {len(s.right)} / wrong {len(s.wrong)} / asked back "
                     f"{len(s.asked_back) + len(s.errors)} of {s.total}")
        lines.append("")
        for case, said, got, gold in s.wrong_cases:
            lines += [f"- **{case.question}**", f"  - semantic query: `{said}`", f"  - got: {got}", f"  - gold: {gold}",
                      "  - gold SQL: `" + " ".join(case.gold_sql(engine).split()) + "`"]
        lines.append("" if s.wrong_cases else "(none)\n")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=["shop", "chinook", "northwind", "all"], default="all")
    parser.add_argument("--engines", default="postgres,mysql,duckdb", help="engine copies of the shop (chinook: postgres)")
    parser.add_argument("--checklist", action="store_true", help="also ask with the draft edited as its checklist says")
    parser.add_argument("--verbose", action="store_true", help="list every question's outcome")
    parser.add_argument("--model", help="ask with this semantic model file instead of the draft (no `semantic init`)")
    parser.add_argument("--questions", choices=["main", "heldout"], default="main",
                        help="which questions: the first sets, or the held-out sets nobody fitted to")
    parser.add_argument("--wrong-file", help="write the wrong answers here (default with --questions heldout: /tmp/heldout_wrong.md)")
    parser.add_argument("--show-draft", action="store_true", help="print what `baton semantic init` printed and the draft")
    raise SystemExit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
