"""``WorkspaceSpec``: what a workspace is made of, declared once.

Every command builds its workspace from a spec (``baton.workspace.assembly.assemble``), so
``serve``, ``worker``, ``mcp``, ``ask``, ``eval`` and ``verified`` cannot drift apart. A spec
comes from a ``baton.yaml`` project file (``baton.workspace.project``), from the CLI's flags
(which override the file), or from Python. It is plain data: it serialises to JSON, which is
how ``baton serve --workers N`` hands it to each worker.

Decisions written down here (the issue was silent):
- One database per workspace. A second one is refused by name: declare a second workspace
  (the no-model router and the ``verified add`` hint speak of one database).
- ``demo: true`` names the built-in finance demo; the CLI fills in its parts
  (``baton.demo.workspace.demo_spec``): the workspace layer knows no demo.
- ``builtin_verified`` and ``vocabulary`` are Python-only (the demo's): they are left out of
  the serialised form, and a spec read from a file never has them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from baton.errors import ConfigurationError

PipelinesMode = Literal["off", "local", "durable"]
PYTHON_ONLY = frozenset({"builtin_verified", "vocabulary"})
DEFAULT_NAME = "database"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class SpecialistSpec(_Spec):
    """One SQL specialist over the database: its name and what it answers (the router reads it)."""

    name: str
    description: str = ""


class FreshnessSpec(_Spec):
    """How to learn when the data was last loaded (``baton.specialists.sql.freshness``)."""

    sql: str | None = None
    column: str | None = None  # TABLE.COLUMN
    max_age: str = "1d"

    @model_validator(mode="after")
    def _one_source(self) -> FreshnessSpec:
        if (self.sql is None) == (self.column is None):
            raise ValueError("freshness needs exactly one of sql and column")
        return self


class DatabaseSpec(_Spec):
    """The workspace's database. ``id`` names its connection (verified questions refer to it)."""

    url: str
    id: str = "database"
    specialists: tuple[SpecialistSpec, ...] = ()  # none: one specialist named "database"
    allow_privileged_role: bool = False
    allow_functions: tuple[str, ...] = ()  # SECURITY DEFINER routines model SQL may call
    schemas: tuple[str, ...] = ()  # schemas model SQL may read beside the connection's default one
    freshness: FreshnessSpec | None = None


class DocumentsSpec(_Spec):
    """A folder of documents: answered from with citations, and the workspace's doctrine."""

    folder: Path
    name: str = "documents"
    description: str = ""
    examples: tuple[str, ...] = ()  # questions the empty page offers (none: from the headings)


class MCPServerSpec(_Spec):
    """An MCP server as a specialist: a command or URL, and the tools it may be asked for."""

    name: str
    server: str
    allow: tuple[str, ...]

    @field_validator("allow")
    @classmethod
    def _allowlist(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("an MCP server needs an allowlist of tools")
        return value


class WorkspaceSpec(_Spec):
    """One workspace (module docstring)."""

    name: str = DEFAULT_NAME
    description: str = ""
    orchestrator: str = "DatabaseOrchestrator"
    demo: bool = False
    database: DatabaseSpec | None = None
    documents: DocumentsSpec | None = None
    semantic: Path | None = None  # Baton YAML, or a dbt MetricFlow project
    semantic_owner: str | None = None  # the SQL specialist owning the model's saved queries
    mcp: tuple[MCPServerSpec, ...] = ()
    model: str | None = None  # BATON_MODEL's form: "openai:gpt-4o-mini,anthropic:..." (a fallback chain)
    state: str | None = None  # the state URL (None: SQLite files under BATON_HOME)
    events: str | None = None  # live events across processes (None: the state's)
    pipelines: PipelinesMode = "durable"
    deadline_s: float | None = Field(default=None, gt=0)  # per question (None: BATON_QUESTION_DEADLINE)
    directory: Path | None = None  # the workspace's local files (None: under the state's home)
    routing_words: tuple[str, ...] = ()  # words of specialist names that say nothing of the topic
    builtin_verified: tuple[Any, ...] = ()  # VerifiedQuestion: shipped ones, seeded into memory once
    vocabulary: Any = None  # a baton.phrasing.Vocabulary (None: the documents' "Also called" lines)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not value or not all(c.isalnum() or c in "-_" for c in value):
            raise ValueError(f"workspace name {value!r}: use letters, digits, '-' and '_'")
        return value

    @model_validator(mode="after")
    def _something_to_answer(self) -> WorkspaceSpec:
        if self.database is None and not self.demo:
            raise ValueError(f"workspace {self.name!r} declares no database (give database.url, or demo: true)")
        return self

    def to_json(self) -> str:
        """The serialisable part (``PYTHON_ONLY`` left out)."""
        return self.model_dump_json(exclude=set(PYTHON_ONLY), exclude_defaults=True)

    @classmethod
    def from_json(cls, text: str) -> WorkspaceSpec:
        return cls.model_validate_json(text)

    def masked(self) -> dict[str, Any]:
        """The spec as data with every password hidden (``baton config check`` prints it)."""
        data = self.model_dump(mode="json", exclude=set(PYTHON_ONLY), exclude_defaults=True)
        holders = [("url", data.get("database")), ("state", data), ("events", data)]
        holders += [("server", server) for server in data.get("mcp", ())]
        for key, holder in holders:
            if isinstance(holder, dict) and holder.get(key):
                holder[key] = mask_url(holder[key])
        return data


def mask_url(url: str) -> str:
    """``url`` without its password (as much of it as parses; what does not parse has any
    ``//user:password@`` masked all the same)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return re.sub(r"//([^:/@]+):[^@/]*@", r"//\1:***@", url)


def spec_error(where: str, exc: Exception) -> ConfigurationError:
    """A pydantic validation error as one readable ``ConfigurationError``."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        lines = [f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()]
        return ConfigurationError(f"{where}: " + "; ".join(lines))
    return ConfigurationError(f"{where}: {exc}")


__all__ = ["DatabaseSpec", "DocumentsSpec", "FreshnessSpec", "MCPServerSpec", "PipelinesMode", "SpecialistSpec",
           "WorkspaceSpec", "mask_url", "spec_error"]
