"""``SemanticLayer``: one model over one connection — its value index, parser and compiler.

The layer is built once per workspace and shared by every request (it holds configuration
and a cache, no per-request state). On first use it indexes, through the connection's own
safety check and engine guard (``SQLConnection.query``):

- the distinct values of each categorical dimension (at most ``MAX_VALUES`` each; a
  dimension with more is indexed partly, and its other values are not recognised in
  questions — they can still be filtered by a model through the tool, when indexed);
- the years the data covers (``MIN``/``MAX`` of each entity's time column), so an ask-back
  for "March" can offer "March 2025" and "March 2024".

Every query it runs goes through ``validate_and_run`` (the safety check with the
connection's ``relation_policy``, pre-validation against the schema, the read-only engine).
A filter value is compiled as a literal of the indexed value's own type (a number stays a
number), and only indexed values are accepted from a model's tool call (``resolve_values``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from baton.semantic.compiler import CompiledQuery, compile_query
from baton.semantic.expressions import is_identifier, render_sql
from baton.semantic.model import TIME, SemanticModel, TimeColumn
from baton.semantic.parser import QuestionParser
from baton.semantic.query import SemanticQuery, SemanticQueryError

if TYPE_CHECKING:
    from sqlglot import exp

    from baton.messages import Tool
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.semantic_port import SemanticCandidate
    from baton.specialists.sql.validation import AttemptReport

log = logging.getLogger(__name__)
MAX_VALUES = 1000


class SemanticLayer:
    def __init__(self, model: SemanticModel, connection: SQLConnection) -> None:
        self.model = model
        self.connection = connection
        self.values: dict[str, dict[str, Any]] = {}  # dimension -> {value as text: value as stored}
        self.years: tuple[int, ...] = ()
        self.parser: QuestionParser | None = None
        self._lock = asyncio.Lock()

    @property
    def dialect(self) -> str:
        return self.connection.dialect

    async def ready(self) -> QuestionParser:
        """The parser, after indexing the values once (module docstring)."""
        if self.parser is not None:
            return self.parser
        async with self._lock:
            if self.parser is None:
                await self._index()
                self.parser = QuestionParser(self.model, {k: list(v) for k, v in self.values.items()}, self.years)
        return self.parser

    async def _index(self) -> None:
        from sqlglot import exp

        from baton.semantic.compiler import _qualify, time_value
        from baton.semantic.expressions import parse_fragment

        values: dict[str, dict[str, Any]] = {}
        for dimension in self.model.dimensions:
            if not dimension.index_values:
                continue
            entity = self.model.entity(dimension.entity)
            column = _qualify(parse_fragment(dimension.expr, f"dimension {dimension.name}"), "t")
            table = exp.alias_(exp.Table(this=exp.to_identifier(entity.table),
                                         db=exp.to_identifier(entity.schema) if entity.schema else None), "t", table=True)
            query = (exp.select(exp.alias_(column, "v")).distinct().from_(table).where(exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null())))
                   .limit(MAX_VALUES + 1))
            sql = render_sql(query, self.dialect)
            try:
                result = await self.connection.query(sql)
            except Exception as exc:  # an unindexed dimension is still usable; its values are just not recognised
                log.warning("indexing the values of dimension %s failed: %s", dimension.name, exc)
                continue
            if result.row_count > MAX_VALUES:
                log.warning("dimension %s has more than %d values: only the first are recognised in questions", dimension.name, MAX_VALUES)
            values[dimension.name] = {str(row[0]): row[0] for row in result.rows[:MAX_VALUES]}
        years: set[int] = set()
        times = {(e.name, e.time) for e in self.model.entities if e.time is not None}
        times |= {(m.entity, m.time) for m in self.model.measures if m.time is not None}
        for name, time in sorted(times, key=lambda t: (t[0], t[1].column)):
            entity = self.model.entity(time.entity or name)
            stored = await self._stored_type(entity.table, time) if time.format == "native" else None
            if stored is not None and not any(word in stored.upper() for word in ("DATE", "TIME")):
                log.debug("the years of %s are not read: its time column %s is %s, not a date", entity.name, time.column, stored)
                continue
            column = time_value(time, "t")
            table = exp.alias_(exp.Table(this=exp.to_identifier(entity.table),
                                         db=exp.to_identifier(entity.schema) if entity.schema else None), "t", table=True)
            from baton.semantic.timegrain import grain_expression

            year = grain_expression(column, time, "year", self.dialect)
            sql = render_sql(exp.select(exp.alias_(exp.Min(this=year), "lo"), exp.alias_(exp.Max(this=year.copy()), "hi")).from_(table),
                             self.dialect)
            try:
                result = await self.connection.query(sql)
            except Exception as exc:
                log.warning("reading the years of %s failed: %s", entity.name, exc)
                continue
            if result.rows and result.rows[0][0] is not None:
                lo, hi = (int(str(v)[:4]) for v in result.rows[0])
                years.update(range(lo, min(hi, lo + 50) + 1))
        self.values, self.years = values, tuple(sorted(years))

    async def _stored_type(self, table: str, time: TimeColumn) -> str | None:
        """The type the database declares for a time that is a plain column (a MetricFlow time
        dimension over an INT year, a text date), or None where it is an expression or unknown:
        years are read only of DATE/TIMESTAMP columns, which the engine's date formatting takes."""
        if not is_identifier(time.column):
            return None
        try:
            info = (await self.connection.schema()).table(table)
        except Exception as exc:  # the years are a convenience: the query itself still reports a missing table
            log.debug("the schema of %s could not be read: %s", table, exc)
            return None
        column = info.column(time.column) if info is not None else None
        return column.type or None if column is not None else None

    # --- compiling and running ----------------------------------------------------------------

    def literal(self, dimension: str, value: str) -> exp.Expr:
        from sqlglot import exp

        stored = self.values.get(dimension, {}).get(value, value)
        if isinstance(stored, bool) or not isinstance(stored, (int, float)):
            return exp.Literal.string(str(value))
        return exp.Literal.number(stored)

    def resolve_values(self, query: SemanticQuery) -> SemanticQuery:
        """``query`` with each filter value matched to an indexed value (case and accents
        aside); ``SemanticQueryError`` for a value the data does not hold, so a model's
        tool call cannot smuggle text into the SQL."""
        from baton.phrasing import fold

        where = []
        for dimension, values in query.where:
            known = self.values.get(dimension)
            if known is None:
                if self.model.has_dimension(dimension) and dimension != TIME:
                    raise SemanticQueryError(f"the values of {dimension} are not indexed, so they cannot be filtered on")
                where.append((dimension, values))
                continue
            folded = {fold(k).strip(): k for k in known}
            matched = []
            for value in values:
                hit = folded.get(fold(str(value)).strip())
                if hit is None:
                    sample = ", ".join(list(known)[:8])
                    raise SemanticQueryError(f"{value!r} is not a {dimension.replace('_', ' ')} in the data (some are: {sample})")
                matched.append(hit)
            where.append((dimension, tuple(matched)))
        return replace(query, where=tuple(where))

    def compile(self, query: SemanticQuery) -> CompiledQuery:
        from baton.semantic.conversion import compile_conversion, reads_conversion

        if len(query.metrics) == 1 and reads_conversion(self.model, query.metrics[0]):
            return compile_conversion(self.model, query, self.dialect)
        return compile_query(self.model, query, self.dialect, literal=self.literal)

    async def offer(self) -> tuple[Tool, str]:
        """The ``semantic_query`` tool and the prompt's catalog of the model, for the SQL
        specialist (``baton.specialists.sql.semantic_port.SemanticTools``)."""
        from baton.semantic.tool import PROMPT_NOTE, catalog, semantic_tool

        await self.ready()
        return semantic_tool(self), f"{catalog(self)}\n{PROMPT_NOTE}"

    def candidate(self, arguments: Any) -> SemanticCandidate | str:
        """A ``semantic_query`` call compiled, or why it was refused (``SemanticTools``)."""
        from baton.semantic.tool import compiled_call

        return compiled_call(arguments, self)

    async def run(self, query: SemanticQuery, *, number: int = 1) -> tuple[CompiledQuery, AttemptReport]:
        """Compile and run ``query`` through the validation pass (safety check, schema
        pre-validation, read-only engine)."""
        await self.ready()
        compiled = self.compile(query)
        return compiled, await self.run_sql(compiled.sql, f"Semantic query: {compiled.query.describe(self.model)}", number=number)

    async def run_sql(self, sql: str, explanation: str, *, number: int = 1) -> AttemptReport:
        """``sql`` built from the model (``compiler.py``) through the same validation pass."""
        from baton.specialists.sql.validation import validate_and_run

        return await validate_and_run(sql, number=number, connection=self.connection, schema=await self.connection.schema(),
                                      explanation=explanation)


__all__ = ["SemanticLayer"]
