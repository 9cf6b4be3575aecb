"""The database engines Baton speaks, by name: a registry like sqlglot's dialects.

``engine_named("postgresql")`` and ``engine_for_url(url)`` answer the ``Engine`` (``base.py``)
for any spelling an engine declares; anything else is refused by name
(``UnsupportedDialectError``), never guessed, because a wrong dialect silently changes how SQL
parses. The built-in engines are loaded on the first look-up, not at import; another engine is
one ``register(MyEngine())`` call (``docs/how-to/adding-an-engine.md``).
"""

from __future__ import annotations

import importlib
import threading

from baton.errors import ConfigurationError
from baton.specialists.sql.engines.base import Engine

__all__ = ["Engine", "UnsupportedDialectError", "engine_for_backend", "engine_named", "installed_driver", "normalize_dialect",
           "register", "registered", "unregister"]

BUILT_IN = tuple(f"baton.specialists.sql.engines.{module}" for module in ("sqlite", "duckdb", "postgres", "mysql"))

_by_spelling: dict[str, Engine] = {}  # every name, alias and SQLAlchemy backend, lower case
_by_backend: dict[str, Engine] = {}
_engines: dict[str, Engine] = {}  # by name, in registration order
_drivers: dict[str, str] = {}  # URL scheme without a driver -> the installed one
_lock = threading.RLock()
_loaded = False


class UnsupportedDialectError(ConfigurationError):
    """A database or dialect name no registered engine answers to."""


def register(engine: Engine, *, replace: bool = False) -> Engine:
    """Make ``engine`` answer to its name, aliases and SQLAlchemy backends. A spelling a
    registered engine already answers to (a built-in one's name included) is refused unless
    ``replace``: then the engine of the same name is forgotten first, aliases and all."""
    _load_built_in()
    with _lock:
        spellings = {engine.name, *engine.aliases, *engine.backends}
        taken = sorted(s for s in spellings if _by_spelling.get(s.lower(), engine) is not engine)
        if taken and not replace:
            raise ConfigurationError(f"engine {engine.name!r}: {', '.join(taken)} already name a registered engine")
        if engine.name in _engines:
            unregister(engine.name)
        _add(engine)
    return engine


def unregister(name: str) -> None:
    """Forget the engine called ``name`` (its aliases and backends too)."""
    with _lock:
        engine = _engines.pop(name, None)
        for table in (_by_spelling, _by_backend):
            for key in [k for k, e in table.items() if e is engine]:
                del table[key]
        for scheme in engine.installed_drivers if engine is not None else ():
            _drivers.pop(scheme, None)


def registered() -> tuple[Engine, ...]:
    """Every engine, built-in ones first."""
    _load_built_in()
    return tuple(_engines.values())


def engine_named(name: str) -> Engine:
    """The engine for a dialect name in any spelling an engine declares: ``"postgresql"``,
    ``"mariadb"``, ``"postgresql+psycopg"`` (SQLAlchemy's dialect+driver)."""
    engine = _by_spelling.get(name)  # the sqlglot name, as nearly every caller passes it
    if engine is not None:
        return engine
    _load_built_in()
    key = (name or "").strip().lower().split("+", 1)[0]
    engine = _by_spelling.get(key)
    if engine is None:
        supported = ", ".join(e.name for e in _engines.values())
        raise UnsupportedDialectError(f"unsupported SQL dialect {name!r}; supported: {supported}")
    return engine


def normalize_dialect(name: str) -> str:
    """The sqlglot dialect name for any spelling: ``"postgresql"`` -> ``"postgres"``,
    ``"mariadb"`` -> ``"mysql"``, ``"postgresql+psycopg"`` -> ``"postgres"``."""
    return engine_named(name).name


def installed_driver(drivername: str) -> str | None:
    """The ``backend+driver`` Baton installs for a URL scheme that names no driver
    (``postgres`` -> ``postgresql+psycopg``), as its engine declares; None when it names one."""
    _load_built_in()
    return _drivers.get(drivername)


def engine_for_backend(backend: str) -> Engine:
    """The engine serving a SQLAlchemy backend name (``URL.get_backend_name()``)."""
    _load_built_in()
    engine = _by_backend.get(backend)
    if engine is None:
        known = ", ".join(sorted(_by_backend))
        raise UnsupportedDialectError(f"unsupported database {backend!r}: use one of {known}")
    return engine


def _add(engine: Engine) -> None:
    _engines[engine.name] = engine
    for spelling in (engine.name, *engine.aliases, *engine.backends):
        _by_spelling[spelling.lower()] = engine
    for backend in engine.backends:
        _by_backend[backend] = engine
    _drivers.update(engine.installed_drivers)


def _load_built_in() -> None:
    global _loaded
    if _loaded:
        return
    with _lock:
        if not _loaded:
            for module in BUILT_IN:
                _add(importlib.import_module(module).ENGINE)
            _loaded = True
