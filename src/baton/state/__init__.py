"""The state layer: where Baton keeps things. SQLite files under ``BATON_HOME`` or one
PostgreSQL database (``location.State``), the stores kept there (conversations, API keys,
login tokens, each with its versioned tables), the buses that carry live events between
processes, and the bulkheads every store's calls run in.

Below the workspace (which answers questions with these stores), above memory (whose engines
and errors the stores use). The names below load their module on first use (PEP 562
``__getattr__``): importing this package opens and imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.state.conversations import SessionNotFound
    from baton.state.keys import ApiKeys, Principal, new_key
    from baton.state.location import Place, State
    from baton.state.sessions import SessionStore

_EXPORTS = {
    "ApiKeys": "baton.state.keys", "Principal": "baton.state.keys", "new_key": "baton.state.keys",
    "Place": "baton.state.location", "State": "baton.state.location",
    "SessionNotFound": "baton.state.conversations", "SessionStore": "baton.state.sessions",
}
__all__ = ["ApiKeys", "Place", "Principal", "SessionNotFound", "SessionStore", "State", "new_key"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'baton.state' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
