"""What can be asked here, and what the data looks like: the page's empty state and schema browser.

``example_questions(ws)`` lists questions a visitor can click on the empty page:

- **verified**: the workspace's verified questions as installed (built-in and saved ones,
  ``baton.workspace.verified``), answered without a model, so every one of them works;
- **metrics** (``metric_questions``, async: the model's values are read first): questions its
  semantic model answers, each checked to read back to its query;
- **documents**: questions the workspace's documents answer. A workspace may name its own
  (``ws.catalog.document_examples``, as the demo does: questions its tests prove are answered);
  otherwise they are made from the section headings (``##``, ``###``) of the Markdown in its
  document folders, as
  "Tell me about <heading>", a definition question the no-model router sends to the
  documents (``baton.agents.document_routing``) when the heading's words are in the passage.

``schema_overview(ws)`` is the schema browser's content: for each SQL connection of the
workspace (through its specialists, each connection once) its tables, their columns and
types, primary and foreign keys, and row counts.

Decisions (the issue was silent):

- Row counts are the introspection's figures (``TableInfo.row_estimate``): the engine's
  statistics on PostgreSQL, MySQL and DuckDB, a bounded count on SQLite. An exact COUNT(*)
  of every table on each page load is the expensive query a schema browser must not cause;
  the page shows them as approximate ("about 1,200 rows").
- Tables are listed in the order of their names; a workspace with more than
  ``MAX_TABLES`` tables lists the first ones and says how many it left out.
- Up to ``MAX_VERIFIED`` verified and ``MAX_DOCUMENT`` document examples; the verified
  questions people saved come first, newest first (the one just saved is on the page), then
  the built-in ones in their order.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.workspace.core import Workspace

log = logging.getLogger(__name__)
MAX_VERIFIED = 12
MAX_DOCUMENT = 6
MAX_TABLES = 300
BUILT_IN_SOURCES = ("demo", "semantic")  # shipped with the workspace, not saved by a person
_HEADING = re.compile(r"^#{2,3}\s+(.{3,60}?)\s*#*\s*$", re.MULTILINE)  # sections, not the title


def sql_connections(ws: Workspace) -> list[Any]:
    """The workspace's SQL connections, through its specialists, each once (``Catalog.databases``)."""
    return list(ws.catalog.databases())


def _topic(heading: str) -> str:
    words = heading.split()
    first = words[0]
    if first[:1].isupper() and first[1:].islower():  # "Cancelled roadshow events": a sentence's capital, not a name's
        words[0] = first.lower()
    return " ".join(words)


def _headings(folder: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(folder.rglob("*.md"))[:200]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")[:200_000]
        except OSError:
            continue
        for heading in _HEADING.findall(text):
            if heading.count(" ") <= 4 and not heading.endswith("?"):
                found.append(heading.strip())
    return found


def document_examples(ws: Workspace) -> list[str]:
    given = ws.catalog.document_examples
    if given:
        return [str(q) for q in given][:MAX_DOCUMENT]
    questions: list[str] = []
    for folder in ws.catalog.document_folders():
        if folder.is_dir():
            questions.extend(f"Tell me about {_topic(h)}" for h in _headings(folder))
    return list(dict.fromkeys(questions))[:MAX_DOCUMENT]


def example_questions(ws: Workspace) -> dict[str, Any]:
    """``{"verified": [{"question", "agent"}], "documents": [question], "no_model": bool}``."""
    from baton.workspace.verified import installed

    every = list(installed(ws))
    saved = [v for v in every if v.record_id and v.source not in BUILT_IN_SOURCES][::-1]  # people's own, newest first
    ordered = saved + [v for v in every if v not in saved]
    verified = [{"question": v.checked_question, "agent": v.agent, "source": v.source} for v in ordered][:MAX_VERIFIED]
    return {"verified": verified, "documents": document_examples(ws), "no_model": ws.no_model}


async def metric_questions(ws: Workspace) -> list[str]:
    """Questions the workspace's semantic model answers (``baton.semantic.examples``, each checked
    to read back); none without a model, or when its values cannot be read."""
    layer = ws.catalog.semantic
    if layer is None:
        return []
    from baton.agents.lexical_routing import LexicalRouter
    from baton.semantic.examples import metric_examples

    router = ws.orchestrator.model
    try:
        if isinstance(router, LexicalRouter):  # only those it sends to the semantic layer, not to the documents
            return await router.metric_examples()
        return metric_examples(layer.model, await layer.ready())
    except Exception:  # the page's examples must not fail because the database is down
        log.warning("listing the semantic model's example questions failed", exc_info=True)
        return []


async def schema_overview(ws: Workspace) -> dict[str, Any]:
    """The schema browser's content (module docstring). A connection whose schema cannot be
    read is listed with its error instead of failing the whole overview."""
    from baton.errors import BatonError

    connections = []
    for connection in sql_connections(ws):
        entry: dict[str, Any] = {"id": connection.id, "dialect": connection.dialect, "tables": []}
        try:
            info = await connection.schema()
        except BatonError as exc:
            entry["error"] = str(exc)[:300]
            connections.append(entry)
            continue
        tables = sorted(info.tables.values(), key=lambda t: ((t.schema or ""), t.name.lower()))
        for table in tables[:MAX_TABLES]:
            entry["tables"].append({**table.to_dict(), "rows": table.row_estimate})
        entry["tables_left_out"] = max(0, len(tables) - MAX_TABLES)
        connections.append(entry)
    return {"workspace": ws.name, "connections": connections}
