"""``check_safety``: decide, before anything touches a connection, whether SQL is one pure read.

Model-written SQL is untrusted input. An unsafe statement fails immediately and is never sent
back to the model for repair (seed 002, "Validation Loop", step 2). The check reads the text
the way the engine will, because a check that parses differently from the server is a bypass:

1. MySQL/MariaDB and SQLite, which have no parser we can ask: ``lexical.py`` scans with the
   engine's own lexical rules and refuses any text whose tokenisation could differ.
2. PostgreSQL and DuckDB: the engine's own parser is the authority (``postgres.py``: pglast,
   which is libpg_query; ``duckdb_reader.py``: DuckDB's parser). Its reading must be one
   query, with no INTO, locking clause or data-modifying CTE; every function it resolves is
   judged by ``functions.py`` (classified from the engines' catalogs); every relation by
   ``relations.py`` (secrets always refused; with a ``RelationPolicy``, only the workspace's
   schemas and a short introspection allowlist); a call to a function the engine does not
   ship whose constant string argument parses as SQL is refused (``sql_in_string``: an
   operator's own ``exec(text)``).
3. sqlglot reads it too (``tree.py``): its tree feeds schema pre-validation and the row cap,
   and its rules are a second opinion; a refusal from either parser refuses.
4. When two parsers were consulted they must agree on the statement count, the relations and
   the functions sqlglot could not identify (every one must be a function the engine reads),
   else the query is refused (``parsers_disagree``): ``U&"pg\\005fread\\005ffile"(...)`` is a
   column ``U`` and an unknown function to sqlglot, ``pg_read_file`` to PostgreSQL.

Where only the engine's parser can read a statement (PostgreSQL's SQL/JSON, XML, geometric
operators, ``TABLESAMPLE ... REPEATABLE``; sqlglot fails or reads an opaque command), the
engine's reading decides alone and the verdict carries no sqlglot tree: the engine is the
authority, and refusing valid SQL the server reads exactly would only teach the model to
write around the check.

What no static check can see — a user-defined function or view whose body writes, a custom
operator — is the engine guard's job: read-only transactions, and a least-privilege role
(``privileges.py``), checked at connect.

The check runs in time linear in the text (it holds the interpreter lock: a slow check stalls
a whole server). A statement over ``MAX_STATEMENT_LENGTH`` characters is refused before any
parser sees it (rule ``too_long``), the same for every caller; below that, every stage is one
pass (``lexical.py``'s scans, one tokenisation, each parser once, one walk of each tree), and
nesting is bounded by the parsers themselves (PostgreSQL's stack depth, DuckDB's expression
depth, Python's recursion limit for sqlglot: a refusal, never a crash). ``work.py`` counts it.

Which of these apply, and with which tables, is the engine's (``Engine.safety``,
``engines/safety_rules.py``): the check resolves the engine once and never compares a dialect
name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from baton.specialists.sql.engines import engine_named
from baton.specialists.sql.safety.definer import definer_call_refusal
from baton.specialists.sql.safety.embedded import judge_embedded, takes_sql_text
from baton.specialists.sql.safety.engine_code import EngineParser, engine_parser
from baton.specialists.sql.safety.functions import builtin_functions, call_refusal, denied_by_own_catalog, denied_reason
from baton.specialists.sql.safety.lexical import called_names, read_lexically, sqlglot_agrees, tokenize
from baton.specialists.sql.safety.metadata import metadata_refusal
from baton.specialists.sql.safety.reading import Reading
from baton.specialists.sql.safety.relations import RelationPolicy, is_catalog_name
from baton.specialists.sql.safety.relations import refusal as relation_refusal
from baton.specialists.sql.safety.tree import UNREADABLE_RULES, read_tree
from baton.specialists.sql.safety.verdict import SafetyVerdict, UnsafeQueryError, refuse
from baton.specialists.sql.safety.work import add

if TYPE_CHECKING:
    from baton.specialists.sql.engines import Engine
    from baton.specialists.sql.engines.safety_rules import SafetyRules

_PATH_CHARACTERS = frozenset("./\\:*?")
# 64 Ki characters (Python string length, not bytes): far above any query a person or a model
# writes, low enough that the slowest parser stays within a fraction of a second.
MAX_STATEMENT_LENGTH = 65_536
_SQL_VALUE_FUNCTIONS = frozenset({"current_date", "current_time", "current_timestamp", "localtime", "localtimestamp",
                                  "current_user", "session_user", "user", "current_role", "current_catalog",
                                  "current_schema", "system_user"})


def check_safety(
    sql: str,
    dialect: str,
    *,
    allowed_functions: Iterable[str] | None = None,
    relations: RelationPolicy | None = None,
) -> SafetyVerdict:
    """Decide whether ``sql`` is a single read-only query in ``dialect``. Never raises for bad
    SQL (that is an unsafe verdict); raises UnsupportedDialectError for an unknown dialect.
    ``relations`` limits what may be read to a workspace's schemas (secret catalogs are
    refused whatever it says)."""
    engine = engine_named(dialect)  # once per check: every rule reads this engine's tables (Engine.safety)
    if len(sql) > MAX_STATEMENT_LENGTH:
        return refuse("too_long", f"the statement is {len(sql):,} characters long; at most {MAX_STATEMENT_LENGTH:,} "
                                  "may be checked")
    allowed = frozenset(f.lower() for f in allowed_functions or ())
    try:
        return _check(sql, engine, allowed, relations, 0)
    except RecursionError:  # a tree too deep for one of our walks: refused, never a crash
        return refuse("unparseable", "the statement is nested too deeply to be checked")


def _check(sql: str, kind: Engine, allowed: frozenset[str], relations: RelationPolicy | None, depth: int) -> SafetyVerdict:
    if not sql.strip():
        return refuse("empty", "there is no statement to run")
    dialect, rules = kind.name, kind.safety
    if relations is not None and (found := definer_call_refusal(sql, rules, relations.definer_routines,
                                                                relations.default_schema)):
        return refuse(*found)  # a definer routine the connection's catalog lists (routines.py); SQL in strings too
    lexical = None
    if rules.lexical is not None:  # no parser of the engine's to ask: its lexical rules first
        lexical = read_lexically(sql, rules.lexical)
        if lexical.hazard:
            return refuse(*lexical.hazard)

    engine: Reading | None = None
    vetted: frozenset[str] = frozenset()
    if (parser := engine_parser(rules)) is not None:
        add(parsed=len(sql))
        try:
            engine = parser.read(sql)
        except parser.error as error:
            return refuse("unparseable", f"{kind.title} cannot parse this statement: {error}")
        except Exception as error:
            return refuse("unparseable", f"the {kind.title} parser failed ({type(error).__name__})")
        verdict, vetted = _judge(engine, kind, parser, allowed, relations, depth)
        if verdict is not None:
            return verdict

    tokens = tokenize(sql, dialect) if lexical is not None else None
    # read before sqlglot's parser takes the tokens (it may move their comments onto nodes)
    disagreement = sqlglot_agrees(tokens, lexical) if lexical is not None else None
    verdict, tree = read_tree(sql, dialect, rules, allowed=allowed | vetted, relations=relations,
                              inspect_strings=engine is None, tokens=tokens)
    if engine is not None and tree is None or engine is not None and verdict.rule in UNREADABLE_RULES:
        return SafetyVerdict(True, f"a single read-only query (read by {kind.title}'s own parser)")
    if not verdict.safe:
        return verdict
    if parser is not None and engine is not None and tree is not None and (why := _disagreement(engine, tree, parser)):
        return refuse("parsers_disagree", why)
    if disagreement:
        return refuse("parsers_disagree", disagreement)
    return verdict


def assert_safe(
    sql: str, dialect: str, *, allowed_functions: Iterable[str] | None = None, relations: RelationPolicy | None = None
) -> SafetyVerdict:
    """The verdict if ``sql`` is safe; raises UnsafeQueryError otherwise."""
    verdict = check_safety(sql, dialect, allowed_functions=allowed_functions, relations=relations)
    if not verdict.safe:
        raise UnsafeQueryError(verdict)
    return verdict


def _judge(
    engine: Reading, kind: Engine, parser: EngineParser, allowed: frozenset[str], relations: RelationPolicy | None,
    depth: int,
) -> tuple[SafetyVerdict | None, frozenset[str]]:
    """The refusal the engine's reading calls for (None if none), and the functions that take
    SQL text whose constant text passed (vetted: not to be refused by name after all)."""
    rules = kind.safety
    vetted: set[str] = set()
    for name, arguments in engine.calls:
        if takes_sql_text(name, rules):
            verdict = judge_embedded(name, arguments, rules, depth,
                                     lambda text, level: _check(text, kind, allowed, relations, level))
            if not verdict.safe:
                return verdict, frozenset()
            vetted.add(name)
    return _refusal(engine, rules, parser, allowed | vetted, relations), frozenset(vetted)


def _refusal(
    engine: Reading, rules: SafetyRules, parser: EngineParser, allowed: frozenset[str], relations: RelationPolicy | None
) -> SafetyVerdict | None:
    if engine.statements == 0:
        return refuse("empty", "there is no statement to run")
    if engine.statements > 1:
        return refuse("multiple_statements", f"only one statement may run at a time; found {engine.statements}")
    if engine.refusal:
        return refuse(*engine.refusal)
    called = {name for name, _ in engine.calls}
    judged = [(name, None) for name in sorted(engine.functions - called)] + engine.calls
    notation: list[tuple[str, tuple[str | None, ...] | None]] = [(n, None) for n in sorted(engine.notation)]
    for name, arguments in [*engine.calls, *notation]:  # catalog functions describing the server or other schemas
        if found := metadata_refusal(name, arguments, rules, relations):
            return refuse(*found)
    for name, arguments in judged:
        if why := call_refusal(name, arguments, rules, allowed):
            return refuse("dangerous_function", f"the function {name}() {why}")
    for name in sorted(engine.notation - allowed):
        if why := denied_by_own_catalog(name, rules):
            return refuse("dangerous_function", f"{name} may call the function {name}(), which {why}")
    for cte in sorted(engine.ctes):
        if is_catalog_name(cte, rules):
            return refuse("sensitive_table", f"a CTE named {cte!r} shadows a catalog relation")
    real = engine.real_relations()
    for relation in sorted(engine.relations, key=str):
        if rules.reads_file_paths and relation.schema is None and _PATH_CHARACTERS.intersection(relation.name):
            return refuse("file_read", f"the table name {relation.name!r} is a file path or URL, which DuckDB would read")
        if found := relation_refusal(relation, rules, relations if relation in real else None):
            return refuse(*found)
    return _strings_refusal(engine, rules, parser, allowed)


def _strings_refusal(engine: Reading, rules: SafetyRules, parser: EngineParser, allowed: frozenset[str]) -> SafetyVerdict | None:
    """A constant string passed to a function the engine does not ship is refused when the
    engine parses it as SQL, or when it calls a refused function (an operator's own
    ``exec(text)``). Each distinct text is read once; DuckDB reads them all in one query."""
    builtins = builtin_functions(rules)
    candidates: dict[str, str] = {}  # text -> the first function it is passed to
    for function, text in engine.strings:
        if function in builtins or function in allowed or (len(text.split()) < 2 and "(" not in text):
            continue  # a lone word ('SELECT' naming a privilege) is neither a statement nor a call
        candidates.setdefault(text, function)
    add(parsed=sum(map(len, candidates)))
    failures: Iterable[bool] = parser.failures(list(candidates))
    for (text, function), failed in zip(candidates.items(), failures):
        if not failed:
            return refuse("sql_in_string", f"a string passed to {function}() is SQL, which that function may run "
                                           "out of this check's sight")
        for name in called_names(text):
            if why := denied_reason(name, rules, allowed):
                return refuse("dangerous_function", f"a string passed to {function}() calls {name}(), which {why}")
    return None


def _disagreement(engine: Reading, tree: Reading, parser: EngineParser) -> str | None:
    """What the two readings disagree on, or None."""
    if engine.statements != tree.statements:
        return f"{engine.parser} reads {engine.statements} statements, sqlglot {tree.statements}"
    unknown = {f for f in tree.functions if f not in engine.functions and f not in parser.grammar_keywords()}
    if unknown:
        return (f"sqlglot reads a call to {', '.join(sorted(unknown))}(), which {engine.parser} does not: the text "
                "means something else to the engine")
    engine_relations = {_key(r) for r in engine.real_relations()}
    tree_relations = {_key(r) for r in tree.real_relations()}
    # sqlglot reads ``FROM current_date`` as a table; PostgreSQL as the function it is
    tree_only = {key for key in tree_relations - engine_relations
                 if not (key[1] is None and (key[2] in engine.functions or key[2] in _SQL_VALUE_FUNCTIONS))}
    if engine_relations - tree_relations or tree_only:
        differ = sorted(".".join(p for p in key if p) for key in (engine_relations - tree_relations) | tree_only)
        return f"the parsers read different relations ({', '.join(differ)})"
    return None


def _key(relation) -> tuple[str | None, str | None, str]:
    lower = lambda v: v.lower() if v else None
    return lower(relation.catalog), lower(relation.schema), relation.name.lower()
