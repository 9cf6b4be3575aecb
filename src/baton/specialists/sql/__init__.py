"""The SQL specialist: safe-by-construction, validated, self-repairing SQL over real databases.

Its public names load on first use (PEP 562 ``__getattr__``): importing the package loads no
database driver and no SQLAlchemy. The ``TYPE_CHECKING`` imports name the same objects for
type checkers, so ``SQLAgent`` is ``SQLAgent`` to them, not ``Any``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.specialists.sql.agent import SQLAgent
    from baton.specialists.sql.classify import ErrorClass, SQLExecutionError
    from baton.specialists.sql.connection import ConnectionOptions, SQLConnection
    from baton.specialists.sql.freshness import Freshness, FreshnessQueryError
    from baton.specialists.sql.learnings import ExtractedLearning, extract_learnings
    from baton.specialists.sql.memory_port import LearningsOnly, MemoryBundle, MemoryPort
    from baton.specialists.sql.privileges import PrivilegedRoleError
    from baton.specialists.sql.result import QueryAttempt, SQLAgentResult
    from baton.specialists.sql.rewrite import apply_learnings

_EXPORTS: dict[str, str] = {
    "SQLAgent": "agent", "ErrorClass": "classify", "SQLExecutionError": "classify",
    "ConnectionOptions": "connection", "SQLConnection": "connection",
    "Freshness": "freshness", "FreshnessQueryError": "freshness",
    "ExtractedLearning": "learnings", "extract_learnings": "learnings", "MemoryPort": "memory_port",
    "MemoryBundle": "memory_port", "LearningsOnly": "memory_port",
    "PrivilegedRoleError": "privileges", "QueryAttempt": "result", "SQLAgentResult": "result",
    "apply_learnings": "rewrite",
}

__all__ = [
    "ConnectionOptions", "ErrorClass", "ExtractedLearning", "Freshness", "FreshnessQueryError", "LearningsOnly", "MemoryBundle", "MemoryPort",
    "PrivilegedRoleError", "QueryAttempt",
    "SQLAgent", "SQLAgentResult", "SQLConnection", "SQLExecutionError", "apply_learnings", "extract_learnings",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
