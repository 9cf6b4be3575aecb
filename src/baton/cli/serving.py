"""Building workspaces and apps for the CLI, serving them, and the demo's self-check.

The CLI answers through ``baton.workspace`` (``local_workspace``): it imports the HTTP
server only to serve. ``baton serve --database URL`` serves that database's workspace
only; without ``--database`` it serves the demo. ``baton serve --workers N`` runs N
processes on one port (``serve_workers``), each building the same app over the same state."""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import socket
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from baton.cli.listening import BACKLOG, bind_listener
from baton.errors import StartupRefusal
from baton.state import ApiKeys, new_key
from baton.state.location import State
from baton.state.login_tokens import LoginTokens
from baton.workspace import Workspace, Workspaces
from baton.workspace.spec import WorkspaceSpec

SMOKE_QUESTION = "What was Pokemon revenue by month in 2025?"


def demo_app(demo: Workspace, state: State | None = None) -> tuple[Any, str]:
    """The HTTP app over the demo workspace, and its key: ``BATON_DEMO_KEY``, else the
    demo's key kept in ``state`` (the same across restarts), else a new one."""
    from baton.server import create_app

    key = os.environ.get("BATON_DEMO_KEY")
    store = None
    if not key and state is not None:
        store = state.keys()
        key = store.default_key(demo.name)
    key = key or new_key()
    app = create_app(Workspaces([demo]), ApiKeys({key: demo.name}, store=store), title="Baton demo")
    return app, key


def _tracker():
    from baton.observability import configure_observability

    return configure_observability()


@contextlib.asynccontextmanager
async def local_workspace(spec: WorkspaceSpec, model, state: State, *, observe: bool = False,
                          quiet: bool = False) -> AsyncIterator[Workspace]:
    """The workspace ``spec`` declares, on ``state``, closed on exit (``baton.cli.specs.open_spec``).
    With ``observe`` it has its own tracker (spans or JSON logs, as the environment says);
    ``quiet``: nothing said while the demo is built (``baton mcp``: stdout is the protocol's)."""
    options: dict[str, Any] = {"tracker": _tracker(), "owns_tracker": True} if observe else {}
    ws = open_workspace(spec, model, state, quiet=quiet, **options)
    async with ws:
        yield ws


def open_workspace(spec: WorkspaceSpec, model, state: State, *, quiet: bool = False, rebuild: bool = False,
                   **parts: Any) -> Workspace:
    """``open_spec`` with the CLI's manners: the documents folder checked first (one line), a
    spinner while the demo's database is first built, and a notice when no model is set."""
    from baton.cli.specs import open_spec

    if spec.documents is not None:
        check_docs(Path(spec.documents.folder))
    if not spec.demo:
        return open_spec(spec, state, model, **parts)
    from baton.demo.workspace import DATABASE_FILE

    fresh = rebuild or not (state.home / "demo" / DATABASE_FILE).exists()
    building = _notes.status("Building the demo workspace (finance database, four specialists)...", spinner="dots")
    with building if fresh and not quiet else contextlib.nullcontext():
        ws = open_spec(spec, state, model, rebuild=rebuild, **parts)
    if ws.no_model and not quiet:
        _notes.print("[yellow]No model configured[/yellow] (BATON_MODEL unset): verified questions are answered without an LLM.")
    return ws


_notes = Console(stderr=True)


def server_app(specs: Sequence[WorkspaceSpec], model, state: State, *,
               run_pipelines: bool | None = None) -> tuple[Any, list[tuple[str, str]]]:
    """The app serving the workspaces ``specs`` declare (one server, one state: each with its own
    keys, conversations and page), and the keys to print (see ``api_keys``). ``model``: the one a
    spec naming none answers with. Pipelines run durably: their stages in this process when the
    state is embedded (or ``run_pipelines``), else on ``baton worker``s."""
    from baton.cli.specs import spec_model
    from baton.server import create_app

    opened: list[Workspace] = []
    try:
        for spec in specs:
            opened.append(open_workspace(spec, spec_model(spec, model), state, run_stages=run_pipelines))
    except BaseException:
        for ws in opened:
            _close_quietly(ws)
        raise
    served = Workspaces(opened)
    keys, printed = api_keys(served, state)
    # keys from BATON_API_KEYS have no store: login sessions still live in the state, so that
    # every process of `serve --workers N` and every restart accepts them
    tokens = None if getattr(keys, "store", None) is not None else LoginTokens(state.keys().engine, owns_engine=True)
    return create_app(served, keys, login_tokens=tokens), printed


def _close_quietly(ws: Workspace) -> None:
    import asyncio

    try:
        asyncio.run(ws.aclose())
    except Exception:
        pass


def one_state(specs: Sequence[WorkspaceSpec], flag: str | None) -> str | None:
    """The state URL every workspace of one server shares (a refusal when the specs disagree)."""
    urls = {flag or s.state for s in specs}
    if len(urls) > 1:
        raise StartupRefusal("the workspaces name different states: one server keeps its workspaces in one state",
                             "give the state once, at the top of baton.yaml, or with --state")
    return next(iter(urls), flag)


def api_keys(workspaces: Workspaces, state: State | None = None) -> tuple[ApiKeys, list[tuple[str, str]]]:
    """``BATON_API_KEYS="key=workspace,..."`` (exactly those keys); else the keys kept in the
    state, with each workspace's default key (made on first start, the same on every
    replica and every restart) to print."""
    keys = environment_keys()
    if keys:
        return ApiKeys(keys), []
    store = (state or State.from_env()).keys()
    printed = [(store.default_key(ws.name), ws.name) for ws in workspaces]
    return ApiKeys(store=store), printed


def environment_keys() -> dict[str, str]:
    """``BATON_API_KEYS="key=workspace,..."`` as a dict (empty when unset)."""
    keys: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in os.environ.get("BATON_API_KEYS", "").split(","))):
        key, _, workspace = pair.partition("=")
        keys[key] = workspace
    return keys


def check_docs(docs: Path | None) -> Path | None:
    """``--docs``: a folder that exists, else a start-up refusal (one line at the CLI)."""
    if docs is not None and not docs.is_dir():
        raise StartupRefusal(f"--docs {docs}: no such folder", "give the folder holding the workspace's documents")
    return docs


def configure_logging(level: str) -> None:
    """Readable logs on stderr. Every step's event is a JSON line on ``baton.events``, and the
    provider SDKs' HTTP clients log every request: both shown at ``debug`` only (at ``info``
    the server says what happens, a line per answer, not every token or call)."""
    import logging

    numeric = log_level_number(level)
    logging.basicConfig(level=numeric, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    logging.getLogger("baton.events").setLevel(logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING)
    for name in HTTP_CLIENT_LOGGERS:  # a line per model call at info: Baton's own line per answer says enough
        logging.getLogger(name).setLevel(logging.DEBUG if numeric <= logging.DEBUG else max(numeric, logging.WARNING))


HTTP_CLIENT_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def log_level_number(level: str) -> int:
    """``--log-level`` as the logging module's number; a refusal (one line, exit 2) for a
    name it is not, checked before a port is bound or a link printed."""
    import logging

    if level.lower() not in LOG_LEVELS:
        raise StartupRefusal(f"--log-level {level}: not a log level", f"use one of {', '.join(LOG_LEVELS)}")
    return int(getattr(logging, level.upper()))


def serve_app(app, host: str, port: int, log_level: str = "info", listener: socket.socket | None = None) -> None:
    """Serve ``app`` on ``listener`` (bound by the caller before it printed a link; bound here
    when not given: ``baton.cli.listening``)."""
    configure_logging(log_level)
    _serve_here(frozen_after_startup(app), host, port, listener)


def _serve_here(app: Any, host: str, port: int, listener: socket.socket | None) -> None:
    """Serve ``app`` (already ``frozen_after_startup``) in this process (``QuietServer``)."""
    import uvicorn

    from baton.cli.quiet_server import QuietServer

    listener = listener or bind_listener(host, port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", log_config=None,
                            backlog=BACKLOG, **proxy_options(), **connection_options())
    server = QuietServer(config)
    with listener, contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[listener])
    if not server.started:  # the app's startup failed (uvicorn logged why): uvicorn's own exit status
        raise SystemExit(STARTUP_FAILURE)


STARTUP_FAILURE = 3


FORWARDED_ALLOW_IPS = "BATON_FORWARDED_ALLOW_IPS"


def proxy_options() -> dict[str, Any]:
    """Whether uvicorn believes ``X-Forwarded-Proto`` / ``X-Forwarded-For``: only from the
    addresses the operator names in ``BATON_FORWARDED_ALLOW_IPS`` (a reverse proxy's, comma
    separated; ``*`` for any), never by default. The scheme decides the login cookie
    (``__Host-`` and ``Secure`` over https): a header anyone on the host could send must not."""
    trusted = os.environ.get(FORWARDED_ALLOW_IPS, "").strip()
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted or None}


def connection_options() -> dict[str, Any]:
    """uvicorn's HTTP protocol with a header timeout and a connection limit
    (``baton.server.connections``), and the open-files limit raised for those connections
    (to the hard limit at most; the limit then follows what was granted)."""
    from baton.server.connections import FD_RESERVE, raise_open_files
    from baton.server.limits import Limits

    limits = Limits.from_env()
    raise_open_files((limits.max_connections or limits.max_in_flight * 5 // 4) + FD_RESERVE)
    return {"http": "baton.server.connections:BatonHttpProtocol", "limit_concurrency": None}


SERVE_CONFIG = "BATON_SERVE_CONFIG"
SERVED_FACTORY = "BATON_SERVED_FACTORY"
SERVED_LOG_LEVEL = "BATON_SERVED_LOG_LEVEL"


def frozen_after_startup(app: Any) -> Any:
    """``app``, whose objects alive when it has started (modules, the app, its workspaces:
    most of the heap, for as long as the server runs) are then moved out of the cyclic
    garbage collector's way (``gc.freeze``). A full collection otherwise walks them all: a
    pause of about 150 ms, measured under load, that every question in flight waits for.
    Only the serving process does this (never an app a library user or a test builds).

    Once started, SIGTERM and SIGINT also tell the app's open streams that the server stops
    (``baton.server.shutdown.watch_signals``): they end with a final event at once, rather
    than holding the process until their clients leave."""

    async def served(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def started(message: Any) -> None:
            if message["type"] == "lifespan.startup.complete":
                import gc

                from baton.server.shutdown import watch_signals

                gc.collect()
                gc.freeze()
                shutdown = getattr(getattr(app, "state", None), "shutdown", None)
                if shutdown is not None:  # after uvicorn installed its own handlers: ours runs first, then its
                    watch_signals(shutdown)
            await send(message)

        await app(scope, receive, started)

    return served


def served_app() -> Any:
    """What each worker of ``serve_factory`` serves: the app ``BATON_SERVED_FACTORY`` builds,
    frozen after startup (``frozen_after_startup``)."""
    configure_logging(os.environ.get(SERVED_LOG_LEVEL) or "info")  # a worker is a new process: the supervisor's set-up is not its own
    return _built(os.environ[SERVED_FACTORY])


def _built(factory: str) -> Any:
    """The app ``factory`` (``"module:function"``) builds, frozen after startup."""
    from uvicorn.importer import import_from_string

    return frozen_after_startup(import_from_string(factory)())


def serve_factory(factory: str, host: str, port: int, *, workers: int = 1, log_level: str = "info",
                  listener: socket.socket | None = None) -> None:
    """Serve the app ``factory`` (``"module:function"``) builds, in ``workers`` processes on
    one port (uvicorn's supervisor; the kernel spreads connections over them). Each worker
    builds its own app: its own workspaces over the same state URL, so any worker continues
    any conversation (``baton serve --workers N``). The workers inherit ``listener`` (bound by
    the caller before it printed a link; bound here when not given). One worker is served in
    this process, as ``baton serve`` without ``--workers`` serves: no supervisor, whose pings
    would wake it twice a second."""
    configure_logging(log_level)
    if workers == 1:
        _serve_here(_built(factory), host, port, listener)
        return
    os.environ[SERVED_FACTORY] = factory  # each worker builds it through served_app
    os.environ[SERVED_LOG_LEVEL] = log_level  # ... and logs as asked
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    listener = listener or bind_listener(host, port)
    config = uvicorn.Config("baton.cli.serving:served_app", factory=True, host=host, port=port, workers=workers,
                            log_level="warning", log_config=None, backlog=BACKLOG, **proxy_options(), **connection_options())
    options: dict[str, Any] = {"sockets": [listener]}
    if "target" in inspect.signature(Multiprocess).parameters:  # an older uvicorn takes the worker's target
        options["target"] = uvicorn.Server(config).run
    with listener, contextlib.suppress(KeyboardInterrupt):
        Multiprocess(config, **options).run()


def serve_workers(config: dict[str, Any], host: str, port: int, workers: int, log_level: str,
                  listener: socket.socket | None = None) -> None:
    """``baton serve --workers N``: the specs (and the state) travel to each worker in
    ``BATON_SERVE_CONFIG``; ``baton.cli.main_commands.app_from_config`` assembles the same
    workspaces there."""
    os.environ[SERVE_CONFIG] = json.dumps(config)
    serve_factory("baton.cli.main_commands:app_from_config", host, port, workers=workers, log_level=log_level,
                  listener=listener)


def check_before_workers(specs: Sequence[WorkspaceSpec], model: Any) -> None:
    """What every worker of ``serve --workers N`` would refuse at start, refused once here,
    before any starts (each worker would print its own traceback, and be started again): the
    ``--docs`` folder, and a Redis event bus that does not answer (pipelines need a model).
    ``printed_keys`` checks ``BATON_API_KEYS`` and the state's schema."""
    for spec in specs:
        check_docs(Path(spec.documents.folder) if spec.documents is not None else None)
    events = os.environ.get("BATON_EVENTS_URL", "")
    if model is not None and events.startswith(("redis://", "rediss://")):
        from baton.state.bus_redis import RedisBus

        RedisBus(events).check()


def printed_keys(specs: Sequence[WorkspaceSpec], state: State) -> list[tuple[str, str]]:
    """The keys ``baton serve --workers N`` prints before its workers start (the same each
    worker's key store holds): none when ``BATON_API_KEYS`` names them."""
    from baton.server.auth import check_key_workspaces

    names = [spec.name for spec in specs]
    configured = environment_keys()
    if configured:  # refused here, once, rather than by every worker with a traceback each
        check_key_workspaces(set(configured.values()), set(names))
        return []
    store = state.keys()
    try:
        return [(store.default_key(name), name) for name in names]
    finally:
        store.close()


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
