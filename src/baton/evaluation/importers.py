"""Golden sets from elsewhere: Spider and BIRD dev files, and a workspace's verified questions.

Spider (``dev.json``): a JSON list of ``{"db_id", "question", "query", ...}``; each database
is ``database/<db_id>/<db_id>.sqlite`` beside the JSON file (or under ``databases``).
BIRD (``dev.json``): ``{"question_id", "db_id", "question", "evidence", "SQL", "difficulty"}``;
databases under ``dev_databases/<db_id>/<db_id>.sqlite``.

Decisions (the issue was silent):
- BIRD's ``evidence`` (the external knowledge a question needs, "refers to ...") goes into
  the question, after a blank line as ``Hint: ...``, as BIRD's own baselines give it; the
  difficulty becomes a tag.
- Spider ids are ``<file stem>:<position>`` (1-based), BIRD ids its ``question_id``: both
  are stable for the same file, so a baseline from last week still matches.
- A database file that does not exist is an error before anything runs, naming the file.
- A workspace's verified questions are its memory's active benchmarks that are not flagged
  stale (``baton memory list --kind benchmark``) together with the verified questions its
  orchestrator was given, the same question once. Their ids are the memory's question key
  (stable across runs and rebuilds); the expected specialist is the one that owns the
  question when known.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.evaluation.golden import GoldenQuestion, GoldenSet, GoldenSetError, load_jsonl, sqlite_url

if TYPE_CHECKING:
    from baton.workspace import Workspace


def _read_json_list(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenSetError(f"cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise GoldenSetError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, list) or not data:
        raise GoldenSetError(f"{path}: expected a non-empty JSON list of questions")
    return data


def _database(folder: Path, db_id: Any, where: str) -> str:
    if not isinstance(db_id, str) or not db_id or "/" in db_id or "\\" in db_id or db_id in (".", ".."):
        raise GoldenSetError(f"{where}: 'db_id' must be a plain name, not {db_id!r}")
    path = folder / db_id / f"{db_id}.sqlite"
    if not path.is_file():
        raise GoldenSetError(f"{where}: the database {path} does not exist")
    return sqlite_url(path)


def _field(item: Any, key: str, where: str) -> str:
    value = item.get(key) if isinstance(item, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise GoldenSetError(f"{where}: '{key}' must be a non-empty string")
    return value.strip()


def load_spider(path: str | Path, *, databases: str | Path | None = None) -> GoldenSet:
    """A Spider-format dev file (module docstring)."""
    path = Path(path)
    folder = Path(databases) if databases is not None else path.parent / "database"
    questions = []
    for i, item in enumerate(_read_json_list(path), start=1):
        where = f"{path}[{i}]"
        db = _database(folder, item.get("db_id") if isinstance(item, dict) else None, where)
        questions.append(GoldenQuestion(id=f"{path.stem}:{i}", question=_field(item, "question", where),
                                        sql=_field(item, "query", where), tags=(item["db_id"],), database=db))
    return GoldenSet(path.stem, questions, source=f"spider:{path}")


def load_bird(path: str | Path, *, databases: str | Path | None = None) -> GoldenSet:
    """A BIRD-format dev file (module docstring)."""
    path = Path(path)
    folder = Path(databases) if databases is not None else path.parent / "dev_databases"
    questions = []
    for i, item in enumerate(_read_json_list(path), start=1):
        where = f"{path}[{i}]"
        db = _database(folder, item.get("db_id") if isinstance(item, dict) else None, where)
        question = _field(item, "question", where)
        evidence = str(item.get("evidence") or "").strip()
        if evidence:
            question = f"{question}\n\nHint: {evidence}"
        tags = [item["db_id"]]
        if isinstance(item.get("difficulty"), str) and item["difficulty"]:
            tags.append(item["difficulty"])
        qid = item.get("question_id", i)
        questions.append(GoldenQuestion(id=str(qid), question=question, sql=_field(item, "SQL", where), tags=tuple(tags), database=db))
    return GoldenSet(path.stem, questions, source=f"bird:{path}")


def detect_format(path: Path) -> str:
    """``jsonl``, ``spider`` or ``bird``, from the file's name and its first entry."""
    if path.suffix.lower() == ".jsonl":
        return "jsonl"
    if path.suffix.lower() != ".json":
        raise GoldenSetError(f"{path}: a golden set is a .jsonl file, or a Spider/BIRD .json file")
    first = _read_json_list(path)[0]
    if isinstance(first, dict) and "SQL" in first and "db_id" in first:
        return "bird"
    if isinstance(first, dict) and "query" in first and "db_id" in first:
        return "spider"
    raise GoldenSetError(f"{path}: neither Spider ('db_id', 'query') nor BIRD ('db_id', 'SQL') format")


def load_golden_set(path: str | Path, *, format: str | None = None, databases: str | Path | None = None) -> GoldenSet:
    """Any supported golden set file, its format detected unless given."""
    path = Path(path)
    if not path.exists():
        raise GoldenSetError(f"the golden set {path} does not exist")
    kind = format or detect_format(path)
    if kind == "jsonl":
        return load_jsonl(path)
    if kind == "spider":
        return load_spider(path, databases=databases)
    if kind == "bird":
        return load_bird(path, databases=databases)
    raise GoldenSetError(f"unknown golden set format {kind!r}; expected jsonl, spider or bird")


def _verified_id(question: str) -> str:
    from baton.memory.feedback import question_key

    return f"verified:{question_key(question)}"


def verified_questions(ws: Workspace, *, name: str | None = None) -> GoldenSet:
    """The workspace's verified questions as a golden set (module docstring)."""
    from baton.verified import content_words

    found: list[GoldenQuestion] = []
    seen: set[frozenset[str]] = set()

    def add(question: str, sql: str, agent: str) -> None:
        key = content_words(question)
        if not question.strip() or not sql.strip() or key in seen:
            return
        seen.add(key)
        found.append(GoldenQuestion(id=_verified_id(question), question=question.strip(), sql=sql.strip(),
                                    specialists=(agent,) if agent else (), tags=("verified",)))

    for verified in getattr(ws.orchestrator, "verified", ()) or ():
        add(verified.question, verified.sql, verified.agent)
    if ws.memory is not None:
        records = ws.memory.list_records(ws.memory_scope(), kind="benchmark", limit=100_000)
        for record in sorted(records, key=lambda r: r.created_at):
            if record.stale:
                continue
            data = record.data or {}
            add(str(data.get("question") or record.text), str(data.get("sql") or record.value or ""), str(data.get("agent") or ""))
    unique: dict[str, GoldenQuestion] = {}
    for q in found:  # two questions with one key (differing only in punctuation): keep the first
        unique.setdefault(q.id, q)
    return GoldenSet(name or f"{ws.name}-verified", list(unique.values()), source=f"workspace:{ws.name}")
