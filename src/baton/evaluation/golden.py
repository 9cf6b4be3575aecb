"""Golden sets: the questions an evaluation asks, and what a right answer looks like.

A golden question carries the question text and at least one expectation:

- ``sql``: the gold query. Its result, run read-only on the question's database, is the
  expected result set (``rows`` wins when both are given);
- ``rows``: the expected result set itself (a list of rows, each a list of values, or a
  list of objects whose values are taken in order: column names never matter);
- ``specialist``: the agent (or agents) the question must be routed to.

The JSONL format, one JSON object per line (blank lines and lines starting with ``#`` are
skipped)::

    {"id": "q1", "question": "How many singers are there?", "sql": "SELECT COUNT(*) FROM singer",
     "specialist": "database", "ordered": null, "tags": ["count"], "tolerance": 0.01,
     "database": "concert.sqlite"}

``ordered``: whether row order matters; ``null``/absent means "when the gold query orders"
(an ORDER BY on its outermost query) and, for ``rows`` without SQL, "no". ``tolerance``: an
absolute tolerance for numbers (a number), or ``{"abs": ..., "rel": ...}``; absent: the
set's default. ``database``: a SQLAlchemy URL or a SQLite file path (relative to the JSONL
file); absent: the database the evaluation is run against (``--database``, else the demo).

Decisions (the issue was silent):
- A malformed line is an error naming the file and the line (``GoldenSetError``), never a
  question silently dropped: a golden set that lost questions measures something else.
- Ids: given, else ``<set name>:<line number>``; duplicates are an error, since the
  regression gate matches questions across runs by id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.errors import BatonError

FIELDS = frozenset({"id", "question", "sql", "rows", "specialist", "ordered", "tags", "tolerance", "database"})


class GoldenSetError(BatonError):
    """A golden set could not be read: a missing file, a malformed line, a question with no
    expectation, a duplicate id. The message names the file and the line."""


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How far two numbers may be apart and still be equal: within ``abs`` or within
    ``rel`` times the larger magnitude. The default absorbs float noise (0.1 + 0.2), not
    rounding: a gold ``ROUND(x, 2)`` against an unrounded ``x`` needs ``abs=0.005``."""

    abs: float = 1e-9
    rel: float = 1e-9

    def close(self, a: float, b: float) -> bool:
        if a == b:
            return True
        return abs(a - b) <= max(self.abs, self.rel * max(abs(a), abs(b)))

    @classmethod
    def parse(cls, value: Any, default: Tolerance | None = None) -> Tolerance:
        """A number (absolute), ``{"abs": .., "rel": ..}``, or ``None`` for ``default``."""
        default = default or cls()
        if value is None:
            return default
        if isinstance(value, bool):
            raise GoldenSetError(f"tolerance must be a number or {{'abs', 'rel'}}, not {value!r}")
        if isinstance(value, (int, float)):
            if value < 0:
                raise GoldenSetError(f"tolerance must not be negative: {value!r}")
            return cls(abs=float(value), rel=default.rel)
        if isinstance(value, dict) and set(value) <= {"abs", "rel"}:
            try:
                out = cls(abs=float(value.get("abs", default.abs)), rel=float(value.get("rel", default.rel)))
            except (TypeError, ValueError) as exc:
                raise GoldenSetError(f"tolerance values must be numbers: {value!r}") from exc
            if out.abs < 0 or out.rel < 0:
                raise GoldenSetError(f"tolerance must not be negative: {value!r}")
            return out
        raise GoldenSetError(f"tolerance must be a number or {{'abs', 'rel'}}, not {value!r}")

    def to_dict(self) -> dict[str, float]:
        return {"abs": self.abs, "rel": self.rel}


@dataclass(frozen=True, slots=True)
class GoldenQuestion:
    """One question of a golden set (module docstring)."""

    id: str
    question: str
    sql: str | None = None
    rows: tuple[tuple[Any, ...], ...] | None = None
    specialists: tuple[str, ...] = ()
    ordered: bool | None = None
    tags: tuple[str, ...] = ()
    tolerance: Tolerance | None = None
    database: str | None = None  # a SQLAlchemy URL; None: the evaluation's default database

    @property
    def expects_result(self) -> bool:
        return self.sql is not None or self.rows is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "question": self.question}
        if self.sql is not None:
            out["sql"] = self.sql
        if self.rows is not None:
            out["rows"] = [list(r) for r in self.rows]
        if self.specialists:
            out["specialist"] = self.specialists[0] if len(self.specialists) == 1 else list(self.specialists)
        if self.ordered is not None:
            out["ordered"] = self.ordered
        if self.tags:
            out["tags"] = list(self.tags)
        if self.tolerance is not None:
            out["tolerance"] = self.tolerance.to_dict()
        if self.database is not None:
            out["database"] = self.database
        return out


@dataclass(slots=True)
class GoldenSet:
    """A named list of golden questions. ``source`` says where it came from (a file, the
    workspace's memory), for the report."""

    name: str
    questions: list[GoldenQuestion] = field(default_factory=list)
    source: str = ""

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for q in self.questions:
            if q.id in seen:
                raise GoldenSetError(f"golden set {self.name!r}: the id {q.id!r} appears twice")
            seen.add(q.id)

    def __len__(self) -> int:
        return len(self.questions)

    def write_jsonl(self, path: str | Path) -> None:
        """Write the set as JSONL (a workspace's verified questions, frozen for CI)."""
        with open(path, "w", encoding="utf-8") as out:
            for q in self.questions:
                out.write(json.dumps(q.to_dict(), ensure_ascii=False) + "\n")


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def resolve_database(value: str, base: Path) -> str:
    """A SQLAlchemy URL as given; anything else is a SQLite file path, relative to ``base``."""
    if "://" in value:
        return value
    path = Path(value).expanduser()
    return sqlite_url(path if path.is_absolute() else base / path)


def _rows(value: Any, where: str) -> tuple[tuple[Any, ...], ...]:
    if not isinstance(value, list):
        raise GoldenSetError(f"{where}: 'rows' must be a list of rows")
    rows = []
    for row in value:
        if isinstance(row, dict):
            rows.append(tuple(row.values()))
        elif isinstance(row, list):
            rows.append(tuple(row))
        else:
            raise GoldenSetError(f"{where}: each row must be a list of values or an object, not {type(row).__name__}")
    return tuple(rows)


def _strings(value: Any, name: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise GoldenSetError(f"{where}: '{name}' must be a string or a list of strings")


def question_from_dict(raw: Any, *, where: str, default_id: str, base: Path, default_tolerance: Tolerance | None = None) -> GoldenQuestion:
    """One golden question from its JSON object; ``GoldenSetError`` naming ``where``."""
    if not isinstance(raw, dict):
        raise GoldenSetError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    unknown = set(raw) - FIELDS
    if unknown:
        raise GoldenSetError(f"{where}: unknown field(s) {sorted(unknown)}; expected some of {sorted(FIELDS)}")
    question = raw.get("question")
    if not isinstance(question, str) or not question.strip():
        raise GoldenSetError(f"{where}: 'question' must be a non-empty string")
    sql = raw.get("sql")
    if sql is not None and (not isinstance(sql, str) or not sql.strip()):
        raise GoldenSetError(f"{where}: 'sql' must be a non-empty string")
    rows = _rows(raw["rows"], where) if raw.get("rows") is not None else None
    specialists = _strings(raw.get("specialist"), "specialist", where)
    if sql is None and rows is None and not specialists:
        raise GoldenSetError(f"{where}: a golden question needs 'sql', 'rows' or 'specialist' to be scored")
    ordered = raw.get("ordered")
    if ordered is not None and not isinstance(ordered, bool):
        raise GoldenSetError(f"{where}: 'ordered' must be true, false or null")
    database = raw.get("database")
    if database is not None and (not isinstance(database, str) or not database.strip()):
        raise GoldenSetError(f"{where}: 'database' must be a URL or a file path")
    qid = raw.get("id", default_id)
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
        raise GoldenSetError(f"{where}: 'id' must be a non-empty string or a number")
    try:
        tolerance = Tolerance.parse(raw.get("tolerance"), default_tolerance) if "tolerance" in raw else default_tolerance
    except GoldenSetError as exc:
        raise GoldenSetError(f"{where}: {exc}") from None
    return GoldenQuestion(
        id=str(qid), question=question.strip(), sql=sql.strip() if sql else None, rows=rows, specialists=specialists,
        ordered=ordered, tags=_strings(raw.get("tags"), "tags", where), tolerance=tolerance,
        database=resolve_database(database, base) if database else None,
    )


def load_jsonl(path: str | Path, *, name: str | None = None) -> GoldenSet:
    """Read a JSONL golden set (module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenSetError(f"cannot read the golden set {path}: {exc}") from exc
    name = name or path.stem
    questions = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldenSetError(f"{where}: not valid JSON ({exc.msg})") from None
        questions.append(question_from_dict(raw, where=where, default_id=f"{name}:{number}", base=path.parent))
    if not questions:
        raise GoldenSetError(f"the golden set {path} has no questions")
    return GoldenSet(name, questions, source=str(path))


def golden_set(name: str, items: Iterable[dict[str, Any]], *, base: str | Path = ".") -> GoldenSet:
    """A golden set from dicts in the JSONL shape (for notebooks and tests)."""
    questions: Sequence[GoldenQuestion] = [
        question_from_dict(raw, where=f"{name}[{i}]", default_id=f"{name}:{i + 1}", base=Path(base))
        for i, raw in enumerate(items)
    ]
    return GoldenSet(name, list(questions), source="python")
