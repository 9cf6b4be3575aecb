"""Building workspaces and apps for the CLI, serving them, and the demo's self-check."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from rich.console import Console

from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.server.auth import new_key

SMOKE_QUESTION = "What was Pokemon revenue by month in 2025?"


def demo_server_workspace(demo) -> Workspace:
    return Workspace(demo.name, demo.orchestrator, SessionStore(demo.directory / "sessions.sqlite"), memory=demo.memory,
                     description="The finance demo (seed 000's four business units).")


def demo_app(demo) -> tuple[Any, str]:
    key = os.environ.get("BATON_DEMO_KEY") or new_key()
    app = create_app(Workspaces([demo_server_workspace(demo)]), ApiKeys({key: demo.name}), title="Baton demo")
    return app, key


def database_workspace(url: str, model, *, docs: Path | None = None, home: Path | None = None) -> tuple[Workspace, Callable]:
    """A workspace over your own database: one SQL specialist (with a memory and saved
    conversations in ``$BATON_HOME/workspaces/<id>/``, the id a hash of the URL so no password
    lands in a path), plus, with ``docs``, a knowledge specialist over that folder whose
    Markdown is also the workspace's doctrine in memory."""
    import hashlib

    from baton.agents import LexicalRouter, OrchestratorAgent
    from baton.cli.main_commands import baton_home
    from baton.memory import MemoryStore, Principal, TrustedAuthenticator, index_doctrine
    from baton.memory.bridge import SQLMemory
    from baton.specialists.knowledge.folder import FolderKnowledgeAgent
    from baton.specialists.sql.agent import SQLAgent
    from baton.specialists.sql.engines import SQLConnection

    directory = (home or baton_home()) / "workspaces" / hashlib.sha256(url.encode()).hexdigest()[:16]
    directory.mkdir(parents=True, exist_ok=True)
    memory = MemoryStore(f"sqlite:///{directory / 'memory.sqlite'}", authenticator=TrustedAuthenticator())
    scope = memory.open(Principal("database"))
    connection = SQLConnection(url, id="database")
    orchestrator = OrchestratorAgent("DatabaseOrchestrator", model=model or LexicalRouter(min_score=0.0))
    orchestrator.add_agent(SQLAgent(connection, name="database", description=f"Answers questions over the {connection.dialect} database.",
                                    model=model, memory=SQLMemory(memory, scope, agent="database")))
    if docs is not None:
        index_doctrine(scope, docs)
        orchestrator.add_agent(FolderKnowledgeAgent(docs, directory / "docs.sqlite", name="documents", model=model,
                                                    description=f"Answers from the documents in {docs.name}/, with citations."))

    async def close() -> None:
        await connection.aclose()
        memory.close()

    return Workspace("database", orchestrator, SessionStore(directory / "sessions.sqlite"), memory=memory), close


async def local_workspace(database: str | None, model, demo_factory, docs: Path | None = None) -> tuple[Workspace, Callable]:
    """The demo workspace, or one over ``database`` (and ``docs``); with its closer."""
    if database:
        return database_workspace(database, model, docs=docs)
    demo = demo_factory()
    return demo_server_workspace(demo), demo.aclose


def server_app(database: str | None, model, demo_factory, console: Console, docs: Path | None = None) -> tuple[Any, list[tuple[str, str]]]:
    workspaces = Workspaces([demo_server_workspace(demo_factory())])
    if database:
        workspaces.add(database_workspace(database, model, docs=docs)[0])
    configured = os.environ.get("BATON_API_KEYS", "")
    keys: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in configured.split(","))):
        key, _, workspace = pair.partition("=")
        keys[key] = workspace
    printed: list[tuple[str, str]] = []
    if not keys:
        for ws in workspaces:
            key = new_key()
            keys[key] = ws.name
            printed.append((key, ws.name))
    return create_app(workspaces, ApiKeys(keys)), printed


def configure_logging(level: str) -> None:
    """Readable logs on stderr. Every step's event is a JSON line on ``baton.events``: shown
    at ``debug`` only (at ``info`` the server says what happens, not every token)."""
    import logging

    numeric = getattr(logging, level.upper(), None)
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r} (debug, info, warning, error)")
    logging.basicConfig(level=numeric, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    logging.getLogger("baton.events").setLevel(logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING)


def serve_app(app, host: str, port: int, log_level: str = "info") -> None:
    import uvicorn

    configure_logging(log_level)
    uvicorn.run(app, host=host, port=port, log_level="warning", log_config=None)


async def smoke_check(app, key: str, console: Console) -> int:
    """What CI runs instead of serving forever: the page loads and a verified question is
    answered for real through the HTTP API (a table and a chart)."""
    import httpx

    from baton.cli.render import print_answer
    from baton.response import AIMessage

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://demo") as client:
        page = await client.get("/")
        response = await client.post("/v1/ask", json={"question": SMOKE_QUESTION}, headers={"Authorization": f"Bearer {key}"})
    if page.status_code != 200 or response.status_code != 200:
        console.print(f"[red]demo check failed: page {page.status_code}, ask {response.status_code}: {response.text[:500]}[/red]")
        return 1
    answer = AIMessage.from_dict(response.json())
    print_answer(console, answer)
    ok = bool(answer.data) and bool(answer.viz_config) and not answer.error
    console.print("[green]demo check passed[/green]" if ok else "[red]demo check failed: no table or chart[/red]")
    return 0 if ok else 1
