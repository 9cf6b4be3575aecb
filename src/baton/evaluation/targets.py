"""What answers the questions, and where the gold queries run: one target per database.

A ``Target`` pairs a ``Workspace`` (its ``answer_stream`` is the only way a question is
answered) with a read-only ``SQLConnection`` to the same database on which gold queries run,
through the same parser check and engine guards as every query (a golden set downloaded
from the internet is untrusted input too). ``Targets`` opens one target per database on first
use (a Spider set spans many databases) and closes them all.

Builders: ``demo_target`` (the demo workspace), ``database_target`` (a workspace over a
database URL, as ``baton ask --database`` builds it), ``workspace_target`` (a workspace you
built yourself; gold queries run on its first SQL specialist's connection unless given one).
The model passed to a builder should be ``Meter.wrap``-ped so its calls are counted.

Decision (the issue was silent): by default the command line evaluates on a throwaway state
(a temporary ``BATON_HOME``): every run starts from the same memory, so two runs compare,
and an evaluation never writes sessions or learnings into the workspace people use.
``--state`` evaluates on a real state instead, memory included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.errors import BatonError

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection
    from baton.state.location import State
    from baton.workspace import Workspace


class TargetError(BatonError):
    """No workspace could be opened for a question's database (bad URL, missing driver, no
    SQL specialist to run gold queries on)."""


@dataclass(slots=True)
class Target:
    workspace: Workspace
    gold: SQLConnection
    owns_workspace: bool = True
    owns_gold: bool = True

    @property
    def dialect(self) -> str:
        return self.gold.dialect

    async def aclose(self) -> None:
        if self.owns_gold:
            await self.gold.aclose()
        if self.owns_workspace:
            await self.workspace.aclose()


Opener = Callable[[str | None], Awaitable[Target]]


class Targets:
    """One target per database key (a URL, or ``None`` for the default), opened on first use
    (once, even when concurrent questions ask for it together), all closed by ``aclose``."""

    def __init__(self, opener: Opener) -> None:
        self._opener = opener
        self._targets: dict[str | None, Target] = {}
        self._locks: dict[str | None, asyncio.Lock] = {}
        self._failed: dict[str | None, TargetError] = {}

    async def get(self, database: str | None) -> Target:
        if database in self._targets:
            return self._targets[database]
        lock = self._locks.setdefault(database, asyncio.Lock())
        async with lock:
            if database in self._failed:  # opened once, failed once: the same reason for every question
                raise TargetError(str(self._failed[database]))
            if database not in self._targets:
                target = None
                try:
                    target = await self._opener(database)
                    start = getattr(target.workspace, "start", None)  # background parts (pipelines), if any
                    if start is not None:
                        await start()
                except Exception as exc:
                    if target is not None:
                        await target.aclose()
                    error = TargetError(f"cannot open a workspace for {_redact(database)}: {type(exc).__name__}: {exc}")
                    self._failed[database] = error
                    raise error from exc
                self._targets[database] = target
        return self._targets[database]

    @property
    def workspaces(self) -> list[Workspace]:
        return [t.workspace for t in self._targets.values()]

    async def aclose(self) -> None:
        targets, self._targets = list(self._targets.values()), {}
        for target in targets:
            try:
                await target.aclose()
            except Exception:  # closing one must not keep the others open
                import logging

                logging.getLogger(__name__).warning("closing an evaluation workspace failed", exc_info=True)

    async def __aenter__(self) -> Targets:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _redact(database: str | None) -> str:
    if database is None:
        return "the default database"
    try:
        from sqlalchemy.engine import make_url

        return make_url(database).render_as_string(hide_password=True)
    except Exception:
        return "the database"


def _gold_connection(url: str, *, allow_privileged_role: bool = False) -> SQLConnection:
    from baton.specialists.sql.connection import SQLConnection

    extra: dict[str, Any] = {"allow_privileged_role": True} if allow_privileged_role else {}
    return SQLConnection(url, id="eval-gold", **extra)


def demo_target(state: State, model: Any, *, semantic: Any = None) -> Target:
    """The demo workspace on ``state`` (built in ``state.home / "demo"`` when missing), with
    ``semantic`` as its semantic model when given."""
    from baton.demo.workspace import build_demo_workspace, demo_database

    ws = build_demo_workspace(state.home / "demo", model=model, state_url=state.url, semantic=semantic)
    return Target(ws, _gold_connection(f"sqlite:///{demo_database(ws)}"))


def workspace_name_for(url: str) -> str:
    """A readable workspace name for a database: a SQLite (or DuckDB) file's stem, else ``database``."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if _file_engine(parsed.get_backend_name()) and parsed.database:
        stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(parsed.database).stem)
        return f"eval-{stem[:40] or 'database'}"
    return "database"


def _file_engine(backend: str) -> bool:
    """Whether ``backend`` is an engine that opens a file in this process (SQLite, DuckDB)."""
    from baton.specialists.sql.engines import UnsupportedDialectError, engine_for_backend

    try:
        return engine_for_backend(backend).in_process
    except UnsupportedDialectError:
        return False


def database_target(url: str, state: State, model: Any, *, allow_privileged_role: bool = False, name: str | None = None,
                    semantic: Any = None) -> Target:
    """A workspace over ``url``, as ``baton ask --database`` builds it, on ``state``."""
    from baton.workspace.database import open_database_workspace

    gold = _gold_connection(url, allow_privileged_role=allow_privileged_role)
    try:
        ws = open_database_workspace(url, model, state=state, name=name or workspace_name_for(url),
                                     allow_privileged_role=allow_privileged_role, semantic=semantic)
    except BaseException:
        gold.close()
        raise
    return Target(ws, gold)


def workspace_target(ws: Workspace, gold: SQLConnection | None = None) -> Target:
    """A workspace you opened (not closed by the evaluation). Gold queries run on ``gold``,
    else on the connection of its first SQL specialist."""
    if gold is None:
        gold = next(iter(ws.catalog.databases()), None)
    if gold is None:
        raise TargetError(f"workspace {ws.name!r} has no SQL specialist to run gold queries on: pass gold=SQLConnection(...)")
    return Target(ws, gold, owns_workspace=False, owns_gold=False)


def fixed_targets(default: Target, others: dict[str, Target] | None = None) -> Targets:
    """Targets given in advance (Python use): ``default`` for questions without a database."""
    known: dict[str | None, Target] = {None: default}
    known.update((others or {}).items())

    async def opener(database: str | None) -> Target:
        if database not in known:
            raise TargetError(f"no workspace given for {_redact(database)}")
        return known[database]

    return Targets(opener)
