"""The code an engine's ``SafetyRules`` names: its own parser, its definer-call finder.

An engine declares its safety tables as data (``engines/safety_rules.py``) and imports nothing
of this package, which reads the engines; code that runs for one engine only (PostgreSQL's
parser: ``postgres.py``; DuckDB's: ``duckdb_reader.py``; how a routine's name resolves:
``definer.py``) stays here and the engine names it as ``"module:attribute"``. It is loaded on
the first check on that engine and remembered, so a check pays one cached look-up for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.specialists.sql.engines.safety_rules import SafetyRules
    from baton.specialists.sql.safety.reading import Reading

DefinerCall = Callable[[str, frozenset[tuple[str, str]], str | None], tuple[str, str] | None]


@dataclass(frozen=True, eq=False, slots=True)
class EngineParser:
    """The engine's own parser, the authority on what the server will run (``check.py``)."""

    read: Callable[[str], Reading]  # the engine's reading of one text; raises ``error`` when it does not parse
    error: type[Exception]
    # for each text, whether the engine fails to parse it, lazily where the engine allows (the
    # check stops at the first text that parses: SQL passed as a string)
    failures: Callable[[list[str]], Iterable[bool]]
    # names the grammar gives a meaning of its own (PostgreSQL's keywords: ``coalesce(...)``),
    # which sqlglot may read as calls the engine's reading does not list (``check._disagreement``)
    grammar_keywords: Callable[[], frozenset[str]] = frozenset


def engine_parser(rules: SafetyRules) -> EngineParser | None:
    """The parser ``rules`` name (None: the engine has none of its own)."""
    return None if rules.parser is None else _parser(rules.parser)


def definer_finder(rules: SafetyRules) -> DefinerCall | None:
    """The definer-call finder ``rules`` name (None: the engine has no definer routines)."""
    return None if rules.definer_call is None else _finder(rules.definer_call)


@cache
def _parser(reference: str) -> EngineParser:
    value = _load(reference)
    if not isinstance(value, EngineParser):
        raise TypeError(f"{reference} names a {type(value).__name__}, not an EngineParser")
    return value


@cache
def _finder(reference: str) -> DefinerCall:
    value = _load(reference)
    if not callable(value):
        raise TypeError(f"{reference} names a {type(value).__name__}, not a function")
    return value


def _load(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    return getattr(import_module(module), attribute)
