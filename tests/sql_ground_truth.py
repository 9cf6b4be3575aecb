"""Ground truth for "is this PostgreSQL statement a read?", judged by PostgreSQL's own parser.

``bench/sql_false_refusals.py`` measures how often the safety check refuses a read and
allows a non-read. Its yardstick must not share the checker's blind spots, so this module
never calls ``baton.specialists.sql.safety``: it parses with ``pglast`` (libpg_query, the
server's grammar, identifiers decoded as the server decodes them) and classifies the tree.

A *read* is one ``SelectStmt`` (plain, VALUES, or a set operation of them) with no INTO, no
locking clause anywhere (FOR UPDATE / SHARE, in subqueries too), no data-modifying CTE, and
no call to a function with side effects (``sql_side_effects``). Everything else is a
*non-read*: DML, DDL, utility statements (EXPLAIN, SHOW and SET included: the definition is
the statement's shape), SELECT INTO, locking reads, side-effecting calls.

User-defined functions: a call to a function the catalog does not have is recorded and
resolved once the whole corpus has been seen (``resolve``), against the ``CREATE FUNCTION`` /
``CREATE PROCEDURE`` statements of the same scope (a regression file) when that scope
defines the name, else of every scope (the suite shares one database across its files, so a
function made in ``test_setup.sql`` is called everywhere). A function's body is read as the
server would run it: SQL bodies (text or ``BEGIN ATOMIC``) statement by statement, PL/pgSQL
through ``pglast.parse_plpgsql`` (every embedded query and expression; where libpg_query's
PL/pgSQL parser gives up, the body's tokens are scanned for write keywords and
side-effecting function names instead). A body that writes, calls a side-effecting
function, runs dynamic SQL (``EXECUTE``) or controls transactions makes the call a non-read,
and so does a volatile body in another language (C...), which cannot be read; a function
declared IMMUTABLE or STABLE in such a language is trusted. Such a statement is a non-read
no static check can see: ``Truth.engine_guard`` marks it (the engine's read-only transaction
and privileges are what stop it). Same-named overloads in one scope are merged: one writing
body taints the name. Functions reached other ways — operators, casts, views, rules,
triggers and aggregates defined by the corpus — are not followed. A called name nobody
defined counts as a read: a built-in newer than the local server (``any_value``), or one of
the regression library's C functions, whose ``CREATE FUNCTION ... AS :'regresslib'`` uses a
psql variable and so never parses.

Statement splitting (``split_psql_script``): the suite is psql scripts. psql meta-command
lines (``\\set``, ``\\d``...) are dropped, ``\\g``-family terminators end a statement, COPY
... FROM stdin data blocks are skipped, and pglast's scanner-based splitter cuts the rest; a
scan error (the suite tests bad literals on purpose) drops that statement and splitting
resumes after the next semicolon. Statements that then fail to parse (psql variables such
as ``:datoid``, deliberate syntax errors) are not in the corpus.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from pglast import parser

from sql_side_effects import SQL_TEXT_ARGUMENT, FunctionCatalog

_TERMINATOR = re.compile(r"(?<=\s)\\(?:g|gx|gset|gexec|gdesc|crosstabview|watch)\b[^\n]*$", re.MULTILINE)
_COPY_STDIN = re.compile(r"^\s*copy\b[^;]*\bfrom\s+stdin\b[^;]*;[^\n]*\n", re.IGNORECASE | re.MULTILINE)
_NOT_STATEMENTS = {"SelectStmt", "ReturnStmt", "RawStmt"}
# Tokens that make a PL/pgSQL body a non-read when only its tokens can be read.
_WRITE_TOKENS = {"INSERT", "UPDATE", "DELETE_P", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE", "EXECUTE",
                 "COPY", "GRANT", "REVOKE", "COMMIT", "ROLLBACK", "CALL", "LOCK_P", "SET", "RESET", "VACUUM",
                 "ANALYZE", "CLUSTER", "REINDEX", "REFRESH", "COMMENT", "NOTIFY", "LISTEN", "DISCARD", "IMPORT_P"}


def read_script(path) -> str:
    """A regression script's text: UTF-8, or Windows-1252 for the one file that tests it."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252")


def _without_psql(text: str) -> str:
    """``text`` with psql's own syntax blanked out, line numbers kept."""
    lines = text.split("\n")
    blank = set()
    for match in _COPY_STDIN.finditer(text):
        first = text.count("\n", 0, match.end())
        for number in range(first, len(lines)):
            blank.add(number)
            if lines[number].strip() == "\\.":
                break
    kept = []
    for number, line in enumerate(lines):
        if number in blank or line.lstrip().startswith("\\"):
            kept.append("")
        else:
            kept.append(_TERMINATOR.sub(";", line))
    return "\n".join(kept)


def split_psql_script(text: str) -> list[tuple[int, str]]:
    """``(first line number, statement)`` for each statement of a psql script."""
    text = _without_psql(text)
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
    found: list[tuple[int, str]] = []
    offset = 0
    while offset < len(text):
        chunk = text[offset:]
        try:
            slices = list(parser.split(chunk, with_parser=False, only_slices=True))
            end = None
        except parser.ParseError as error:
            bad = error.args[1] if len(error.args) > 1 and isinstance(error.args[1], int) else 0
            slices, cut = [], bad
            while (cut := chunk.rfind(";", 0, cut)) >= 0:  # the last whole statement before it
                try:
                    slices = list(parser.split(chunk[:cut + 1], with_parser=False, only_slices=True))
                    break
                except parser.ParseError:
                    continue
            semicolon = chunk.find(";", bad)
            end = offset + semicolon + 1 if semicolon >= 0 else len(text)
        for piece in slices:
            found.append((bisect.bisect_right(line_starts, offset + piece.start), chunk[piece]))
        if end is None:
            break
        offset = end
    return found


@dataclass(frozen=True)
class Truth:
    """The classification of one statement.

    ``kind`` is the root node (``SelectStmt``, ``InsertStmt``...); ``reasons`` says why it is
    not a read (empty for a read); ``udfs`` are the non-catalog functions it calls, still to
    be resolved; ``engine_guard`` is set when only a user-defined function's body makes it a
    non-read."""

    read: bool
    kind: str
    reasons: tuple[str, ...] = ()
    udfs: frozenset[str] = frozenset()
    engine_guard: bool = False


@dataclass
class _Body:
    reasons: list[str] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)


class PostgresGroundTruth:
    """Classifies statements; ``observe`` each (in corpus order), then ``resolve`` each."""

    def __init__(self, catalog: FunctionCatalog):
        self.catalog = catalog
        self.functions: dict[tuple[str, str], list[_Body]] = {}  # (scope, name) -> bodies
        self._scopes: dict[str, set[str]] = {}  # name -> scopes defining it
        self._resolved: dict[tuple[str, str], str | None] = {}

    # --- per statement ---------------------------------------------------------------------

    def observe(self, sql: str, scope: str = "") -> Truth | None:
        """Classify ``sql`` as far as it alone allows; None when PostgreSQL cannot parse it.
        A ``CREATE FUNCTION`` is remembered, in ``scope``, for ``resolve``."""
        try:
            tree = json.loads(parser.parse_sql_json(sql))
        except parser.ParseError:
            return None
        statements = [raw["stmt"] for raw in tree.get("stmts", [])]
        if not statements:
            return None
        reasons: list[str] = []
        calls: set[str] = set()
        for statement in statements:
            self._scan(statement, reasons, calls, depth=0)
            if "CreateFunctionStmt" in statement:
                self._remember(sql, statement["CreateFunctionStmt"], scope)
        kind = next(iter(statements[0])) if len(statements) == 1 else "multiple statements"
        if len(statements) > 1:
            reasons.insert(0, "multiple statements")
        return Truth(not reasons, kind, tuple(dict.fromkeys(reasons)), frozenset(calls))

    def resolve(self, truth: Truth, scope: str = "") -> Truth:
        """``truth`` with its user-defined calls judged against the functions observed."""
        if not truth.read:
            return truth
        found = [f"calls {name}(): {why}" for name in sorted(truth.udfs)
                 if (why := self.function_effect(name, scope))]
        if not found:
            return truth
        return Truth(False, truth.kind, tuple(found), truth.udfs, engine_guard=True)

    def classify(self, sql: str, scope: str = "") -> Truth | None:
        """``observe`` then ``resolve``: for a statement whose functions are already known."""
        truth = self.observe(sql, scope)
        return None if truth is None else self.resolve(truth, scope)

    # --- the tree --------------------------------------------------------------------------

    def _scan(self, node: object, reasons: list[str], calls: set[str], depth: int) -> None:
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(reversed(item))
                continue
            if not isinstance(item, dict):
                continue
            for key, value in item.items():
                if key.endswith("Stmt") and key[0].isupper() and key not in _NOT_STATEMENTS:
                    reasons.append(key)
                elif key == "SelectStmt":
                    if value.get("intoClause"):
                        reasons.append("SELECT INTO")
                    if value.get("lockingClause"):
                        reasons.append("locking clause (FOR UPDATE / SHARE)")
                elif key == "CommonTableExpr":
                    query_kind = next(iter(value.get("ctequery", {"SelectStmt": 0})))
                    if query_kind != "SelectStmt":
                        reasons.append(f"data-modifying WITH ({query_kind})")
                elif key == "FuncCall":
                    self._call(value, reasons, calls, depth)
                if isinstance(value, (dict, list)):
                    stack.append(value)

    def _call(self, call: dict, reasons: list[str], calls: set[str], depth: int) -> None:
        parts = [part["String"]["sval"] for part in call.get("funcname", []) if "String" in part]
        if not parts:
            return
        name, schema = parts[-1], (parts[-2] if len(parts) > 1 else None)
        builtin = schema == "pg_catalog" or self.catalog.is_builtin(name) or name in SQL_TEXT_ARGUMENT
        if schema not in (None, "pg_catalog") or not builtin:
            calls.add(name)
            return
        if name in SQL_TEXT_ARGUMENT:
            args = call.get("args", [])
            index = SQL_TEXT_ARGUMENT[name]
            if name == "ts_rewrite" and len(args) != 2:
                return
            text = _constant_text(args[index]) if index < len(args) else None
            why = "runs SQL built at run time" if text is None else self._text_effect(text, calls, depth)
            if why:
                reasons.append(f"{name}(): {why}")
            return
        if what := self.catalog.side_effect(name):
            reasons.append(f"{name}(): {what}")

    def _text_effect(self, text: str, calls: set[str], depth: int) -> str | None:
        """Why the SQL ``text`` a function will run is not a read, or None."""
        if depth > 4:
            return "SQL text nested too deep to follow"
        try:
            tree = json.loads(parser.parse_sql_json(text))
        except parser.ParseError:
            return "runs SQL text that does not parse"
        inner: list[str] = []
        for raw in tree.get("stmts", []):
            self._scan(raw["stmt"], inner, calls, depth + 1)
        return f"runs SQL that is not a read ({inner[0]})" if inner else None

    # --- user-defined functions ------------------------------------------------------------

    def _remember(self, sql: str, create: dict, scope: str) -> None:
        name = create["funcname"][-1]["String"]["sval"]
        options = {o["DefElem"]["defname"]: o["DefElem"].get("arg") for o in create.get("options", [])}
        language = _sval(options.get("language")) or "sql"
        volatility = _sval(options.get("volatility")) or "volatile"
        body = _Body()
        if language == "sql":
            self._sql_body(create, options.get("as"), body)
        elif language == "plpgsql":
            self._plpgsql_body(sql, _sval(((options.get("as") or {}).get("List", {}).get("items") or [{}])[0]), body)
        elif volatility == "volatile":
            body.reasons.append(f"volatile {language} function: body not readable")
        self.functions.setdefault((scope, name), []).append(body)
        self._scopes.setdefault(name, set()).add(scope)
        self._resolved.clear()

    def _sql_body(self, create: dict, text_arg: object, body: _Body) -> None:
        if create.get("sql_body") is not None:
            self._scan(create["sql_body"], body.reasons, body.calls, depth=0)
            return
        texts = [_sval(item) for item in (text_arg or {}).get("List", {}).get("items", [])]
        if not texts or texts[0] is None:
            body.reasons.append("SQL body not readable")
            return
        try:
            tree = json.loads(parser.parse_sql_json(texts[0]))
        except parser.ParseError:
            body.reasons.append("SQL body does not parse")
            return
        for raw in tree.get("stmts", []):
            self._scan(raw["stmt"], body.reasons, body.calls, depth=0)

    def _plpgsql_body(self, sql: str, text: str | None, body: _Body) -> None:
        try:
            tree = json.loads(parser.parse_plpgsql_json(sql))
        except parser.ParseError:
            self._plpgsql_tokens(text, body)
            return
        for key, value in _items(tree):
            if key in ("PLpgSQL_stmt_dynexecute", "PLpgSQL_stmt_dynfors", "dynquery"):
                body.reasons.append("runs dynamic SQL")
            elif key in ("PLpgSQL_stmt_commit", "PLpgSQL_stmt_rollback"):
                body.reasons.append("controls transactions")
            elif key == "PLpgSQL_expr" and isinstance(value, dict):
                query = _plpgsql_query(value)
                if query is None:
                    continue
                try:
                    inner = json.loads(parser.parse_sql_json(query))
                except parser.ParseError:
                    body.reasons.append("PL/pgSQL statement does not parse")
                    continue
                for raw in inner.get("stmts", []):
                    self._scan(raw["stmt"], body.reasons, body.calls, depth=0)

    def _plpgsql_tokens(self, text: str | None, body: _Body) -> None:
        """The fallback for a body libpg_query's PL/pgSQL parser rejects: its SQL tokens
        (strings and comments skipped by the scanner)."""
        try:
            tokens = list(parser.scan(text)) if text else None
        except parser.ParseError:
            tokens = None
        if tokens is None:
            body.reasons.append("PL/pgSQL body not readable")
            return
        for index, token in enumerate(tokens):
            if token.name in _WRITE_TOKENS:
                body.reasons.append(f"{token.name.removesuffix('_P')} (body scanned as tokens)")
            elif token.name == "IDENT" and index + 1 < len(tokens) and tokens[index + 1].name == "ASCII_40":
                name = text[token.start:token.end + 1]
                name = name[1:-1] if name.startswith('"') else name.lower()
                if self.catalog.is_builtin(name):
                    if what := self.catalog.side_effect(name):
                        body.reasons.append(f"{name}(): {what}")
                else:
                    body.calls.add(name)

    def function_effect(self, name: str, scope: str = "") -> str | None:
        """Why calling the user-defined ``name`` from ``scope`` is not a read (its bodies,
        transitively), or None: a read, or a function this corpus never defined (a newer
        built-in or an extension's, judged by the families at the call)."""
        key = (scope, name)
        if key not in self._resolved:
            self._resolved[key] = None  # a recursive call adds nothing new
            scopes = [scope] if (scope, name) in self.functions else sorted(self._scopes.get(name, ()))
            found = None
            for body in (body for where in scopes for body in self.functions[(where, name)]):
                found = f"body: {body.reasons[0]}" if body.reasons else None
                for callee in sorted(body.calls - {name}):
                    if found is None and (why := self.function_effect(callee, scope)):
                        found = f"via {callee}(): {why}"
                if found:
                    break
            self._resolved[key] = found
        return self._resolved[key]


def _items(tree: object) -> Iterator[tuple[str, object]]:
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                yield key, value
                if isinstance(value, (dict, list)):
                    stack.append(value)


def _plpgsql_query(expr: dict) -> str | None:
    """A PL/pgSQL expression as SQL pglast can parse: statements as they are, expressions
    and assignment right-hand sides as ``SELECT <expr>``; None for type names."""
    query, mode = expr.get("query", ""), expr.get("parseMode", 0)
    if mode == 0:
        return query
    if mode == 2:
        return "SELECT " + query
    if mode in (3, 4, 5):
        match = re.match(r"[^:=]*?(?::=|=)(.*)\Z", query, re.DOTALL)
        return "SELECT " + match.group(1) if match else None
    return None


def _sval(node: object) -> str | None:
    if isinstance(node, dict) and "String" in node:
        return node["String"].get("sval")
    return None


def _constant_text(node: dict) -> str | None:
    """The string literal ``node`` is (possibly cast), or None when it is computed."""
    while "TypeCast" in node:
        node = node["TypeCast"].get("arg", {})
    constant = node.get("A_Const", {})
    return constant.get("sval", {}).get("sval") if "sval" in constant else None
