"""Pre-validation: catch wrong table and column names before the query reaches a database.

The model repairs a query best when it hears about every wrong name at once, with the
closest real names next to each (seed 002, "Validation Loop", step 1). The engine stops at
the first error and speaks its own dialect of error text; this module reads the query with
sqlglot in the connection's dialect, walks its scopes and checks every name against the
introspected ``SchemaInfo``.

Decisions (where the issue is silent):
- sqlglot's ``qualify`` stops at the first unknown column and ignores unknown tables, so
  names are resolved here, scope by scope: CTEs, derived tables, table and column aliases
  (``FROM t AS x(a, b)``), correlated references to outer scopes, ``USING`` / ``NATURAL``
  joins, ``*`` and ``t.*`` expansion inside CTEs and derived tables.
- When the answer is not known, nothing is reported: a table function, ``UNNEST``, a
  catalog table (``information_schema``, ``pg_catalog``, ``sqlite_master``...), a PIVOT or an
  unnamed projection makes the columns of that source unknown, and unqualified columns
  that could come from it are not flagged. A false "unknown column" costs a repair round
  trip and teaches the model something wrong; a missed one is still caught by the engine.
- SELECT-list aliases count as names in GROUP BY, HAVING and ORDER BY in every dialect, and
  also in WHERE and later SELECT items for DuckDB and SQLite, which accept that.
- Engine pseudo-columns (``rowid``, ``ctid``...) and niladic keywords that parse as columns
  (``user``, ``current_schema``) are not flagged.
- An empty schema means "not introspected": no names are checked at all.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from baton.specialists.sql.engines import Engine, engine_named
from baton.specialists.sql.schema import SchemaInfo, TableInfo

IssueKind = Literal["unknown_table", "unknown_column", "ambiguous_column", "parse_error"]


@dataclass(frozen=True, slots=True)
class SchemaIssue:
    """One wrong name in a query. ``suggestions`` are the closest existing names, best first
    (``table.column`` when the column lives in a table the query does not use)."""

    kind: IssueKind
    name: str
    table: str | None = None
    suggestions: list[str] = field(default_factory=list)
    message: str = ""


_CATALOG_SCHEMAS = frozenset({"information_schema", "pg_catalog", "mysql", "performance_schema", "sys"})
_CATALOG_PREFIXES = ("sqlite_", "pg_", "duckdb_")
_NILADIC = frozenset({"user", "current_user", "session_user", "current_role", "current_schema",
                      "current_catalog", "system_user", "localtime", "localtimestamp", "sysdate"})

_Columns = dict[str, str] | None  # lower-cased name -> name as written; None = unknown


def prevalidate(sql: str | exp.Expr, schema: SchemaInfo, dialect: str) -> list[SchemaIssue]:
    """Every unknown table, unknown column and ambiguous column in ``sql`` (in order of
    appearance, each once). A statement that does not parse gives one ``parse_error``.

    ``sql`` may also be an already parsed statement (``SafetyVerdict.statement``), which
    saves parsing it twice; it is only read, never changed.
    """
    engine = engine_named(dialect)
    dialect = engine.name
    if isinstance(sql, str):
        try:
            statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
        except (SqlglotError, RecursionError) as error:
            text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            return [SchemaIssue("parse_error", "", None, [], f"The query does not parse as {dialect} SQL: {text}")]
    else:
        statements = [sql]
    if not schema.tables:
        return []
    issues: list[SchemaIssue] = []
    for statement in statements:
        try:
            _Checker(schema, engine, statement).run(issues)
        except (SqlglotError, RecursionError):
            continue  # sqlglot cannot build scopes for it; the engine will judge
    seen: set[tuple[str, str, str | None]] = set()
    unique = []
    for issue in issues:
        key = (issue.kind, issue.name.lower(), (issue.table or "").lower())
        if key not in seen:
            seen.add(key)
            unique.append(issue)
    return unique


def format_issues_for_repair(issues: list[SchemaIssue]) -> str:
    """The issues as plain text for the repair prompt, one line each, with "did you mean"."""
    if not issues:
        return ""
    lines = ["The query uses names that do not match the database schema:"]
    for issue in issues:
        line = f"- {issue.message}"
        if issue.suggestions:
            line += " Did you mean " + " or ".join(f"`{s}`" for s in issue.suggestions) + "?"
        lines.append(line)
    lines.append("Fix every one of these names, using only tables and columns from the schema.")
    return "\n".join(lines)


def _close(name: str, candidates: dict[str, str], n: int = 3) -> list[str]:
    """Closest candidates (keys lower-cased, values as written) to ``name``, best first."""
    matches = difflib.get_close_matches(name.lower(), list(candidates), n=n, cutoff=0.6)
    return [candidates[m] for m in matches]


class _Checker:
    """Resolves the names of one statement; lives for one call only."""

    def __init__(self, schema: SchemaInfo, engine: Engine, statement: exp.Expr):
        self.schema = schema
        self.engine = engine
        self.statement = statement
        self.cte_names = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        self.open_statement = statement.find(exp.Pivot) is not None
        self._scope_columns: dict[int, _Columns] = {}
        self._table_columns: dict[int, dict[str, str]] = {}

    # -- driving -----------------------------------------------------------------------

    def run(self, issues: list[SchemaIssue]) -> None:
        for scope in traverse_scope(self.statement):
            for source in scope.sources.values():
                if isinstance(source, exp.Table):
                    self._check_table(source, issues)
            if isinstance(scope.expression, (exp.Select, exp.SetOperation)) and not self.open_statement:
                for column in scope.columns:
                    if column.find_ancestor(exp.Select, exp.SetOperation) is scope.expression:
                        self._check_column(scope, column, issues)

    def _check_table(self, table: exp.Table, issues: list[SchemaIssue]) -> None:
        if self._is_function(table) or self._is_catalog(table) or table.name.lower() in self.cte_names:
            return
        if self._lookup(table) is None:
            names = {t.name.lower(): t.name for t in self.schema.tables.values()}
            issues.append(SchemaIssue("unknown_table", table.name, None, _close(table.name, names),
                                      f"Table `{table.name}` does not exist."))

    # -- tables -------------------------------------------------------------------------

    def _lookup(self, table: exp.Table) -> TableInfo | None:
        if table.db:
            found = self.schema.table(f"{table.db}.{table.name}")
            if found is not None:
                return found
        return self.schema.table(table.name)

    @staticmethod
    def _is_function(table: exp.Table) -> bool:
        return not isinstance(table.this, exp.Identifier)

    @staticmethod
    def _is_catalog(table: exp.Table) -> bool:
        if table.db.lower() in _CATALOG_SCHEMAS:
            return True
        name = table.name.lower()
        return name.startswith(_CATALOG_PREFIXES) or name == "dual"

    # -- what a source provides ---------------------------------------------------------

    def _source_columns(self, source: exp.Table | Scope) -> _Columns:
        """The columns a FROM item provides, or None when that cannot be known."""
        if isinstance(source, Scope):
            return self._scope_output(source)
        renamed = _alias_columns(source.args.get("alias"))
        if renamed is not None:
            return renamed
        if self._is_function(source) or self._is_catalog(source) or source.name.lower() in self.cte_names:
            return None
        info = self._lookup(source)
        if info is None:
            return None
        key = id(info)
        if key not in self._table_columns:
            self._table_columns[key] = {c.name.lower(): c.name for c in info.columns}
        return self._table_columns[key]

    def _scope_output(self, scope: Scope) -> _Columns:
        key = id(scope)
        if key not in self._scope_columns:
            self._scope_columns[key] = None  # a recursive CTE reading itself: unknown until known
            self._scope_columns[key] = self._compute_scope_output(scope)
        return self._scope_columns[key]

    def _compute_scope_output(self, scope: Scope) -> _Columns:
        expression = scope.expression
        # Column aliases rename the output: ``WITH c(a, b) AS``, ``(...) AS d(a, b)``,
        # ``UNNEST(x) AS u(v)``; they sit on the expression or on the node holding it.
        for holder in (expression, expression.parent):
            if holder is not None and (renamed := _alias_columns(holder.args.get("alias"))) is not None:
                return renamed
        while isinstance(expression, exp.SetOperation):
            expression = expression.this
        if not isinstance(expression, exp.Select):
            return None
        output: dict[str, str] = {}
        for projection in expression.expressions:
            if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column) and projection.is_star):
                star = self._expand_star(scope, projection)
                if star is None:
                    return None
                output.update(star)
            elif projection.alias_or_name:
                output[projection.alias_or_name.lower()] = projection.alias_or_name
            else:
                return None  # an unnamed expression: each engine names it differently
        return output

    def _expand_star(self, scope: Scope, projection: exp.Expr) -> _Columns:
        if isinstance(scope.expression, exp.SetOperation):
            return None
        qualifier = projection.table if isinstance(projection, exp.Column) else ""
        output: dict[str, str] = {}
        for alias, (_, source) in scope.selected_sources.items():
            if qualifier and alias.lower() != qualifier.lower():
                continue
            columns = self._source_columns(source)
            if columns is None:
                return None
            output.update(columns)
        return output

    # -- columns ------------------------------------------------------------------------

    def _check_column(self, scope: Scope, column: exp.Column, issues: list[SchemaIssue]) -> None:
        name = column.name
        if not name or isinstance(column.this, exp.Star) or _is_lambda_parameter(column):
            return
        if isinstance(scope.expression, exp.SetOperation):  # ORDER BY of a UNION: its output names
            output = self._scope_output(scope)
            if output is not None and name.lower() not in output:
                issues.append(SchemaIssue("unknown_column", name, None, _close(name, output),
                                          f"Column `{name}` is not an output column of the set operation."))
        elif column.table:
            self._check_qualified(scope, column, issues)
        else:
            self._check_unqualified(scope, column, issues)

    def _check_qualified(self, scope: Scope, column: exp.Column, issues: list[SchemaIssue]) -> None:
        qualifier, name = column.table, column.name
        for visible in _scope_chain(scope):
            for alias, (_, source) in visible.selected_sources.items():
                if alias.lower() != qualifier.lower():
                    continue
                columns = self._source_columns(source)
                if columns is None or name.lower() in columns:
                    return
                shown = source.name if isinstance(source, exp.Table) else alias
                issues.append(SchemaIssue(
                    "unknown_column", name, shown, _close(name, columns) or self._elsewhere(name),
                    f"Column `{name}` does not exist in `{shown}`" + (f" (alias `{alias}`)." if alias != shown else ".")))
                return
        # No FROM item with that name: a struct field (DuckDB/PostgreSQL ``col.field``)?
        if any(qualifier.lower() in (self._source_columns(s) or {}) for v in _scope_chain(scope)
               for _, (_, s) in v.selected_sources.items()):
            return
        aliases = {a.lower(): a for v in _scope_chain(scope) for a in v.selected_sources}
        issues.append(SchemaIssue("unknown_table", qualifier, None, _close(qualifier, aliases),
                                  f"`{qualifier}.{name}` refers to `{qualifier}`, which is no table or alias in "
                                  "this part of the query."))

    def _check_unqualified(self, scope: Scope, column: exp.Column, issues: list[SchemaIssue]) -> None:
        name = column.name
        lowered = name.lower()
        if lowered in _NILADIC or lowered in self.engine.pseudo_columns:
            return
        if self._is_select_alias(scope, column):
            return
        for depth, visible in enumerate(_scope_chain(scope)):
            sources = visible.selected_sources
            if any(lowered == alias.lower() for alias in sources):
                return  # a whole-row reference (PostgreSQL ``SELECT t FROM t``)
            hits, unknown = [], False
            for alias, (_, source) in sources.items():
                columns = self._source_columns(source)
                if columns is None:
                    unknown = True
                elif lowered in columns:
                    hits.append((alias, source))
            if len(hits) > 1 and depth == 0 and not _is_merged_join_column(visible, lowered):
                names = [f"{alias}.{name}" for alias, _ in hits]
                places = ", ".join(_label(alias, source) for alias, source in hits)
                issues.append(SchemaIssue("ambiguous_column", name, None, names,
                                          f"Column `{name}` is ambiguous: it exists in {places}; qualify it."))
                return
            if hits or unknown:
                return
        own = {**self._visible_columns(scope), **_select_aliases(scope)}
        tables = [s.name for _, (_, s) in scope.selected_sources.items() if isinstance(s, exp.Table)]
        table = tables[0] if len(tables) == 1 and len(scope.selected_sources) == 1 else None
        where = f" in `{table}`" if table else " in any table of this part of the query"
        issues.append(SchemaIssue("unknown_column", name, table, _close(name, own) or self._elsewhere(name),
                                  f"Column `{name}` does not exist{where}."))

    def _is_select_alias(self, scope: Scope, column: exp.Column) -> bool:
        if column.name.lower() not in _select_aliases(scope):
            return False
        clause = column.find_ancestor(exp.Group, exp.Having, exp.Order, exp.Qualify, exp.Where, exp.Select)
        if isinstance(clause, (exp.Group, exp.Having, exp.Order, exp.Qualify)):
            return True
        return self.engine.select_aliases_everywhere

    def _visible_columns(self, scope: Scope) -> dict[str, str]:
        found: dict[str, str] = {}
        for _, (_, source) in scope.selected_sources.items():
            found.update(self._source_columns(source) or {})
        return found

    def _elsewhere(self, name: str) -> list[str]:
        """``table.column`` for tables the query does not use but that have this column."""
        lowered = name.lower()
        return [f"{t.name}.{c.name}" for t in self.schema.tables.values() for c in t.columns
                if c.name.lower() == lowered][:3]


def _label(alias: str, source: exp.Table | Scope) -> str:
    if isinstance(source, exp.Table) and source.name.lower() != alias.lower():
        return f"`{source.name}` (as `{alias}`)"
    return f"`{alias}`"


def _scope_chain(scope: Scope | None) -> Iterator[Scope]:
    while scope is not None:
        yield scope
        scope = scope.parent


def _alias_columns(alias: exp.Expr | None) -> _Columns:
    if isinstance(alias, exp.TableAlias) and alias.columns:
        return {c.name.lower(): c.name for c in alias.columns}
    return None


def _select_aliases(scope: Scope) -> dict[str, str]:
    expression = scope.expression
    if not isinstance(expression, exp.Select):
        return {}
    return {p.alias.lower(): p.alias for p in expression.expressions if isinstance(p, exp.Alias) and p.alias}


def _is_merged_join_column(scope: Scope, lowered: str) -> bool:
    """Whether a ``USING`` (or NATURAL) join merges this column into one."""
    for join in scope.expression.args.get("joins") or ():
        if str(join.method).upper() == "NATURAL":
            return True
        if any(u.name.lower() == lowered for u in join.args.get("using") or ()):
            return True
    return False


def _is_lambda_parameter(column: exp.Column) -> bool:
    lam = column.find_ancestor(exp.Lambda)
    while lam is not None:
        if any(p.name.lower() == column.name.lower() for p in lam.expressions):
            return True
        lam = lam.find_ancestor(exp.Lambda)
    return False
