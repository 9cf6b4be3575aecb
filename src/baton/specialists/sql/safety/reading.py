"""What one parser read in a statement text: the facts the safety rules are applied to.

Each engine reader (``postgres.py``: pglast, ``duckdb_reader.py``: DuckDB's parser,
``tree.py``: sqlglot) fills a ``Reading`` with the names *as that parser resolved them*, so
that the rules run on the engine's names and two parsers can be compared (``agreement``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baton.specialists.sql.safety.relations import Relation
from baton.specialists.sql.safety.sizes import BuildEstimate


@dataclass
class Reading:
    """``refusal`` is a structural finding (``(rule, reason)``: not a query, SELECT INTO, a
    locking clause, a data-modifying CTE...). ``functions`` are bare, lower-cased names of
    everything called; ``notation`` the names that may call a function by functional
    notation (``t.f`` is ``f(t)`` to PostgreSQL, or a column ``f``); ``calls`` holds each call's name and its arguments' constant text, decoded as
    the engine decodes it (None for an argument that is not a constant string)."""

    parser: str
    statements: int = 0
    refusal: tuple[str, str] | None = None
    functions: set[str] = field(default_factory=set)
    notation: set[str] = field(default_factory=set)
    relations: set[Relation] = field(default_factory=set)
    ctes: set[str] = field(default_factory=set)
    calls: list[tuple[str, tuple[str | None, ...]]] = field(default_factory=list)
    build: BuildEstimate = field(default_factory=BuildEstimate)  # engine readers: sizes known from constants

    def refuse(self, rule: str, reason: str) -> None:
        if self.refusal is None:
            self.refusal = (rule, reason)

    @property
    def strings(self) -> list[tuple[str, str]]:
        """Each called function with the constant text of one of its string arguments."""
        return [(name, text) for name, arguments in self.calls for text in arguments if text is not None]

    def real_relations(self) -> set[Relation]:
        """Relations that are not references to a CTE of the statement."""
        ctes = {c.lower() for c in self.ctes}
        return {r for r in self.relations if r.schema is not None or r.name.lower() not in ctes}
