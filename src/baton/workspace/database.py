"""A workspace over your own database: one SQL specialist, optionally a folder of documents.

``open_database_workspace(url, model, docs=...)`` is the Python shorthand for
``assemble(WorkspaceSpec(database=DatabaseSpec(url=url), ...))`` (``baton.workspace.assembly``,
the one builder). It wires an orchestrator with one SQL
specialist over ``url`` (read-only, through the same safety checks as every query), a
memory (doctrine, learnings, insights) and saved conversations, plus, with ``docs``, a
knowledge specialist over that folder whose Markdown is also the workspace's doctrine.
With a model configured, multi-step questions run as pipelines (``planning.py``). Its
verified questions (``verified.py``: ``baton verified add``, "Save as verified question")
are read from its memory when it opens.

Where its state lives: the ``state`` given (``baton.state.location``), by default SQLite
files in ``$BATON_HOME/workspaces/<id>/``, the id a hash of the URL so no password lands in
a path. The workspace closes its connection, memory, index and sessions when it closes.

``semantic``: a semantic model file (Baton's YAML or dbt MetricFlow's): metric questions are
then answered from it, with or without a model (``baton.workspace.semantic``).

``allow_privileged_role`` is passed to the SQL connection only when set (the connection's
own guard refuses a privileged role otherwise; see ``baton.specialists.sql``).

``freshness``: how to learn when the data was last loaded and how old it may be
(``baton.specialists.sql.freshness.Freshness``): answers on older data carry a
``staleness_warning``. Its query is safety-checked here (``FreshnessQueryError``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.workspace.assembly import database_workspace_id
from baton.workspace.core import Workspace

if TYPE_CHECKING:
    from baton.llm.base import ChatModel
    from baton.specialists.sql.freshness import Freshness
    from baton.state.location import State
    from baton.workspace.spec import PipelinesMode

DATABASE_WORKSPACE = "database"


def open_database_workspace(url: str, model: ChatModel | None, *, docs: str | Path | None = None, state: State | None = None,
                            name: str = DATABASE_WORKSPACE, allow_privileged_role: bool = False,
                            tracker: Any = None, owns_tracker: bool = False, pipelines: Any = "auto",
                            semantic: str | Path | None = None, freshness: Freshness | None = None,
                            allow_functions: tuple[str, ...] = ()) -> Workspace:
    """The workspace (module docstring). ``pipelines``: ``"auto"`` (in-process pipelines
    when a model is configured), ``None`` (none), or a factory ``(workspace, runner) ->
    service`` such as ``durable_pipelines(host)``."""
    from baton.workspace.assembly import assemble
    from baton.workspace.spec import DatabaseSpec, DocumentsSpec, WorkspaceSpec

    mode, factory = pipelines_argument(pipelines)
    spec = WorkspaceSpec(name=name, database=DatabaseSpec(url=url, allow_privileged_role=allow_privileged_role,
                                                          allow_functions=tuple(allow_functions)),
                         documents=DocumentsSpec(folder=Path(docs)) if docs is not None else None,
                         semantic=Path(semantic) if semantic is not None else None, pipelines=mode)
    return assemble(spec, model=model, state=state, tracker=tracker, owns_tracker=owns_tracker,
                    executor_factory=factory, freshness=freshness)


def pipelines_argument(pipelines: Any) -> tuple[PipelinesMode, Any]:
    """The builders' ``pipelines`` argument as a spec's mode and an executor factory:
    ``"auto"`` is ``local``, ``None`` is ``off``, a factory runs them its way."""
    if pipelines == "auto":
        return "local", None
    if pipelines is None:
        return "off", None
    return "local", pipelines


__all__ = ["DATABASE_WORKSPACE", "database_workspace_id", "open_database_workspace", "pipelines_argument"]
