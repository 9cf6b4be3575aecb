"""The parser-side safety check: only a single read-only query may reach a database.

Model-written SQL is untrusted input. This check decides, before anything touches a
connection, whether a statement is a pure read; an unsafe statement fails immediately and is
never sent back to the model for repair (seed 002, "Validation Loop", step 2). The engine
adds defence in depth (read-only transactions, timeouts); this check is the first wall, and
it fails closed.

Decisions (where the issue is silent):
- Allowed shapes are a whitelist: one statement whose root is SELECT, a set operation
  (UNION / INTERSECT / EXCEPT), VALUES, or a parenthesised one of those; a WITH clause hangs
  off that root in sqlglot, so ``WITH ... SELECT`` is allowed and ``WITH ... INSERT`` is not.
  Read-only statements of other shapes (SHOW, DESCRIBE, EXPLAIN, DuckDB's PIVOT/SUMMARIZE
  statements) are refused too: the agent can always say the same thing as a SELECT, and a
  whitelist cannot be surprised by a new statement type.
- The whole tree is walked, so a write hidden in a CTE, a subquery or a set operation
  branch is found. Anything sqlglot only parses as an opaque ``Command`` is refused, and so
  is anything that does not parse at all (MySQL ``INTO OUTFILE``, ``LOAD DATA``).
- Text inside string literals and comments is never inspected: ``'please DELETE later'`` is
  data, not a statement. The one exception: MySQL/MariaDB execute ``/*! ... */`` comments,
  so in that dialect such a comment is refused (``executable_comment``). The parser's
  reading of strings and comments must match the engine's: backslash escapes are read as
  MySQL's default and PostgreSQL's ``E''`` strings do; nested block comments as
  PostgreSQL and DuckDB nest them.
- Dangerous functions are matched by name, case-insensitively, whatever schema qualifies
  them (``pg_catalog.pg_read_file``). The list is one set for every dialect, because a
  function name that reads files in one engine has no business in a query for another
  (a user-defined ``pg_sleep`` in MySQL is not worth the risk); the few names that are
  harmless elsewhere (``glob`` is SQLite's pattern match) are blocked only where dangerous.
- SQL given as a string: PostgreSQL functions such as ``ts_stat``, ``ts_rewrite`` and
  ``query_to_xml`` run a query given as text, and ``table_to_xml`` & co. read a table named
  in a string, past every rule here (``ts_stat($$SELECT ... pg_read_file(...)$$)`` read a
  server file). They are refused by name, and one rule covers the functions nobody listed
  (an operator's own ``exec(text)``): on PostgreSQL, a call whose constant string argument
  (plain, ``E''``, ``U&''``, dollar-quoted, cast or concatenated from literals) parses as a
  query or DML is refused (``sql_in_string``); in every dialect, so is one whose string
  argument parses as SQL calling a dangerous function. The price: a PostgreSQL call given
  text that reads as a query (``lower('Select an option')``) is refused too. Strings that
  are not function arguments stay data (``SELECT 'read_csv(...)'`` is allowed).
- Catalog tables that hold password hashes (``pg_authid``, ``pg_shadow``, ``mysql.user``...)
  are refused: agents are often connected as a superuser that could read them.
- Sequence writers (``nextval``, ``setval``) and xid assignment (``txid_current``,
  ``pg_current_xact_id``) are writes; ``currval``/``lastval`` only read and stay allowed.
- DuckDB reads any file or URL named as a table (``FROM 'data.csv'``, ``FROM "s3://..."``):
  table names that look like paths are refused. ``allowed_functions`` lets a caller that
  registers its own paths (not the model) switch individual functions back on, e.g.
  ``{"read_parquet"}``; path-like table names stay refused whatever it says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from baton.errors import AgentFatalError
from baton.specialists.sql.dialects import normalize_dialect
from baton.specialists.sql.literals import string_arguments


@dataclass(frozen=True, slots=True)
class SafetyVerdict:
    """The outcome of ``check_safety``.

    ``rule`` is a stable code a program can switch on ("" when safe): empty,
    unparseable, multiple_statements, not_a_query, write_statement, data_modifying_cte,
    select_into, ddl, privilege, copy, command, set, pragma, attach, transaction,
    locking_clause, side_effect_statement, dangerous_function, file_read,
    executable_comment, sensitive_table, sql_in_string.
    ``statement`` is the parsed query (when it parsed as a single statement).
    """

    safe: bool
    reason: str
    rule: str = ""
    statement: exp.Expression | None = None


class UnsafeQueryError(AgentFatalError):
    """A statement failed the safety check. Fatal: unsafe SQL is never retried."""

    def __init__(self, verdict: SafetyVerdict):
        super().__init__(f"unsafe SQL ({verdict.rule}): {verdict.reason}")
        self.verdict = verdict


# --- what is refused ----------------------------------------------------------------------


def _classes(*names: str) -> tuple[type[exp.Expression], ...]:
    """The sqlglot node classes that exist in this sqlglot version (names move between
    releases; a missing one must not break the import)."""
    return tuple(getattr(exp, n) for n in names if isinstance(getattr(exp, n, None), type))


_ALLOWED_ROOTS = _classes("Select", "SetOperation", "Union", "Intersect", "Except", "Values")

# Node class -> (rule, what it does). Order matters only for readability: the first match wins.
_FORBIDDEN: tuple[tuple[tuple[type[exp.Expression], ...], str, str], ...] = (
    (_classes("Insert", "Update", "Delete", "Merge"), "write_statement", "modifies data"),
    (_classes("TruncateTable"), "write_statement", "deletes every row of a table"),
    (_classes("Into"), "select_into", "writes a table or variables"),
    (_classes("Create", "Drop", "Alter", "AlterColumn", "AlterRename", "RenameColumn", "Comment", "DDL"),
     "ddl", "changes the schema"),
    (_classes("Grant", "Revoke"), "privilege", "changes privileges"),
    (_classes("Copy", "LoadData", "Export"), "copy", "moves data to or from files"),
    (_classes("Command"), "command", "is a statement the parser cannot inspect"),
    (_classes("Set", "SetItem"), "set", "changes session or server settings"),
    (_classes("Pragma"), "pragma", "changes engine settings"),
    (_classes("Attach", "Detach"), "attach", "attaches or detaches a database file"),
    (_classes("Transaction", "Commit", "Rollback"), "transaction", "controls transactions"),
    (_classes("Lock"), "locking_clause", "takes row locks"),
    (_classes("Install", "Use", "Kill", "Analyze", "Cache", "Uncache", "Execute", "Declare", "Refresh"),
     "side_effect_statement", "has side effects"),
)

_FILES = "reads or writes files on the database server"
_NET = "reaches other servers over the network"
_SQL_TEXT = "runs SQL given as a string, which this check cannot inspect"
_SLEEP = "stalls the server"
_ADMIN = "changes server state"
_NAMED_TABLE = "reads tables named in a string, which this check cannot inspect"

# Exact function names (lower case) refused in every dialect, with why.
_DANGEROUS_FUNCTIONS: dict[str, str] = {
    # PostgreSQL
    "pg_stat_file": _FILES, "pg_logdir_ls": _FILES,
    "set_config": "changes session settings",
    "pg_terminate_backend": _ADMIN, "pg_cancel_backend": _ADMIN, "pg_reload_conf": _ADMIN,
    "pg_rotate_logfile": _ADMIN, "pg_switch_wal": _ADMIN, "pg_create_restore_point": _ADMIN,
    "pg_promote": _ADMIN, "pg_start_backup": _ADMIN, "pg_stop_backup": _ADMIN,
    "pg_export_snapshot": _ADMIN, "pg_import_system_collations": _ADMIN,
    "pg_log_backend_memory_contexts": _ADMIN, "pg_truncate_visibility_map": _ADMIN,
    "pg_notify": "sends notifications to other sessions",
    "nextval": "advances a sequence (a write)", "setval": "sets a sequence (a write)",
    "txid_current": "assigns a transaction id (a write)",
    "pg_current_xact_id": "assigns a transaction id (a write)",
    "ts_stat": _SQL_TEXT, "ts_rewrite": _SQL_TEXT,  # ts_rewrite(tsquery, 'SELECT ...') runs the text
    "pg_prewarm": _ADMIN,
    # MySQL / MariaDB
    "load_file": _FILES, "sleep": _SLEEP, "benchmark": _SLEEP,
    "get_lock": "takes a named server lock", "release_lock": "releases a named server lock",
    "release_all_locks": "releases named server locks",
    "master_pos_wait": _SLEEP, "source_pos_wait": _SLEEP, "wait_for_executed_gtid_set": _SLEEP,
    "wait_until_sql_thread_after_gtids": _SLEEP,
    # SQL Server (refused everywhere: these names only ever mean remote/file access)
    "openrowset": _NET, "opendatasource": _NET, "openquery": _NET,
    # SQLite (and its shell extensions)
    "load_extension": "loads native code into the database", "readfile": _FILES,
    "writefile": _FILES, "fts3_tokenizer": "registers native code", "edit": "starts an editor",
    "fsdir": _FILES, "zipfile": _FILES, "sqlar_uncompress": _FILES,
    # DuckDB
    "parquet_scan": _FILES, "sniff_csv": _FILES, "delta_scan": _FILES, "iceberg_scan": _FILES,
    "iceberg_metadata": _FILES, "iceberg_snapshots": _FILES, "st_read": _FILES,
    "st_read_meta": _FILES, "sqlite_scan": _FILES, "sqlite_attach": _FILES,
    "json_execute_serialized_sql": _SQL_TEXT, "next_value_for": "advances a sequence (a write)",
    "pg_stat_statements_reset": _ADMIN,
    "getenv": "reads the server's environment", "duckdb_secrets": "lists stored credentials",
    "which_secret": "lists stored credentials", "load_aws_credentials": "loads credentials",
}

# Name prefixes refused in every dialect (whole families of functions).
_DANGEROUS_PREFIXES: tuple[tuple[str, str], ...] = (
    ("pg_read_", _FILES), ("pg_ls_", _FILES), ("pg_file_", _FILES), ("lo_", _FILES),
    ("dblink", _NET), ("pg_sleep", _SLEEP), ("pg_advisory", "takes advisory locks"),
    ("pg_try_advisory", "takes advisory locks"), ("pg_stat_reset", _ADMIN),
    ("pg_create_", _ADMIN), ("pg_drop_", _ADMIN), ("pg_replication_", _ADMIN),
    ("pg_logical_", _ADMIN), ("pg_wal_replay_", _ADMIN), ("pg_backup_", _ADMIN),
    ("query_to_xml", _SQL_TEXT), ("cursor_to_xml", _SQL_TEXT),
    # these read a table, schema or database named in a string (past the sensitive-table rule)
    ("table_to_xml", _NAMED_TABLE), ("schema_to_xml", _NAMED_TABLE), ("database_to_xml", _NAMED_TABLE),
    ("pg_copy_", _ADMIN),
    ("sys_", "runs operating-system commands"), ("xp_", "runs operating-system commands"),
    ("sp_", "runs stored procedures"),
    ("read_", _FILES), ("parquet_", _FILES), ("postgres_", _NET), ("mysql_", _NET), ("odbc_", _NET),
)

# Names refused only in one dialect, because elsewhere they are ordinary functions.
_DIALECT_FUNCTIONS: dict[str, dict[str, str]] = {
    "duckdb": {"glob": "lists server files", "query": _SQL_TEXT, "query_table": _SQL_TEXT},
    "sqlite": {"eval": _SQL_TEXT},  # the eval() extension of SQLite's shell
}

_PATH_CHARACTERS = frozenset("./\\:*?")

# Catalog tables holding credentials: readable by the superusers people do connect as.
_SENSITIVE_TABLES = frozenset({"pg_authid", "pg_shadow", "pg_user_mapping", "pg_user_mappings"})
_SENSITIVE_QUALIFIED = frozenset({("mysql", "user"), ("mysql", "global_priv"), ("mysql", "password_history")})


def dangerous_function_reason(name: str, dialect: str, allowed: frozenset[str] = frozenset()) -> str | None:
    """Why calling the function ``name`` is refused in ``dialect``, or None if it is not."""
    lowered = name.lower()
    if lowered in allowed:
        return None
    if why := _DANGEROUS_FUNCTIONS.get(lowered) or _DIALECT_FUNCTIONS.get(dialect, {}).get(lowered):
        return why
    return next((why for prefix, why in _DANGEROUS_PREFIXES if lowered.startswith(prefix)), None)


# --- the check ----------------------------------------------------------------------------


def check_safety(sql: str, dialect: str, *, allowed_functions: Iterable[str] | None = None) -> SafetyVerdict:
    """Decide whether ``sql`` is a single read-only query in ``dialect``. Never raises for bad
    SQL (that is an unsafe verdict); raises UnsupportedDialectError for an unknown dialect."""
    dialect = normalize_dialect(dialect)
    allowed = frozenset(f.lower() for f in allowed_functions or ())
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as error:
        return SafetyVerdict(False, f"the statement does not parse as {dialect} SQL: {_first_line(error)}", "unparseable")
    except Exception as error:  # noqa: BLE001 - a parser crash must fail closed, never open
        return SafetyVerdict(False, f"the parser failed on this statement ({type(error).__name__})", "unparseable")
    if not statements:
        return SafetyVerdict(False, "there is no statement to run", "empty")
    if len(statements) > 1:
        return SafetyVerdict(False, f"only one statement may run at a time; found {len(statements)}",
                             "multiple_statements")
    statement = statements[0]
    if dialect == "mysql" and _has_executable_comment(sql):
        return SafetyVerdict(False, "a /*! ... */ comment is executed by MySQL and MariaDB as SQL", "executable_comment")

    root = statement
    while isinstance(root, (exp.Subquery, exp.Paren)) and isinstance(root.this, exp.Expression):
        root = root.this
    if not isinstance(root, _ALLOWED_ROOTS):
        rule, does = _forbidden_rule(root) or ("not_a_query", "is not a query")
        return SafetyVerdict(False, f"{_describe(root)} {does}; only SELECT, set operations and VALUES may run", rule)

    for node in statement.walk():
        if verdict := _check_node(node, sql, dialect, allowed):
            return verdict
    return SafetyVerdict(True, "a single read-only query", "", statement)


def assert_safe(sql: str, dialect: str, *, allowed_functions: Iterable[str] | None = None) -> exp.Expression:
    """The parsed statement if ``sql`` is safe; raises UnsafeQueryError otherwise."""
    verdict = check_safety(sql, dialect, allowed_functions=allowed_functions)
    if not verdict.safe or verdict.statement is None:
        raise UnsafeQueryError(verdict)
    return verdict.statement


def _check_node(node: exp.Expression, sql: str, dialect: str, allowed: frozenset[str]) -> SafetyVerdict | None:
    if found := _forbidden_rule(node):
        rule, does = found
        if rule == "write_statement" and node.find_ancestor(exp.CTE) is not None:
            return SafetyVerdict(False, f"a CTE {does} ({_describe(node)} inside WITH)", "data_modifying_cte")
        return SafetyVerdict(False, f"{_describe(node)} {does}", rule)
    if isinstance(node, exp.PropertyEQ) and isinstance(node.this, exp.Parameter):
        return SafetyVerdict(False, f"{_describe(node)} sets a session variable", "set")
    if isinstance(node, exp.Func):
        for name in _function_names(node):
            if why := dangerous_function_reason(name, dialect, allowed):
                return SafetyVerdict(False, f"the function {name}() {why}", "dangerous_function")
        if verdict := _string_arguments_verdict(node, sql, dialect, allowed, depth=0):
            return verdict
    if isinstance(node, exp.Table) and _is_sensitive_table(node):
        return SafetyVerdict(False, f"the table {node.name} holds credentials", "sensitive_table")
    if dialect == "duckdb" and isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        if _PATH_CHARACTERS.intersection(node.name):
            return SafetyVerdict(False, f"the table name {node.name!r} is a file path or URL, which DuckDB would read",
                                 "file_read")
    return None


# --- SQL hidden in the string arguments of a call ----------------------------------------

_MAX_STRING_DEPTH = 3  # a string inside a string inside a string... beyond this, refuse
_QUERY_WORD = re.compile(r"\b(?:select|with|values|table|insert|update|delete|merge)\b", re.IGNORECASE)
_CALLED_NAME = re.compile(r'([A-Za-z_][A-Za-z0-9_$]*)"?\s*\(')
_DATA_MODIFYING = _classes("Insert", "Update", "Delete", "Merge")


def _string_arguments_verdict(
    call: exp.Func, source: str, dialect: str, allowed: frozenset[str], depth: int
) -> SafetyVerdict | None:
    """Refuse a call whose constant string arguments are SQL that would be dangerous if
    the function ran it: on PostgreSQL any query or DML (functions such as ``ts_stat`` run
    such text with the caller's rights, and users install their own), in every dialect a
    statement that calls a dangerous function."""
    for text in string_arguments(call, dialect, source):
        if depth >= _MAX_STRING_DEPTH:
            return SafetyVerdict(False, f"SQL text nested {depth} strings deep cannot be checked", "sql_in_string")
        if verdict := _sql_text_verdict(call, text, dialect, allowed, depth):
            return verdict
    return None


def _sql_text_verdict(call: exp.Func, text: str, dialect: str, allowed: frozenset[str], depth: int) -> SafetyVerdict | None:
    postgres = dialect == "postgres"
    query_word = postgres and _QUERY_WORD.search(text) is not None
    if "(" not in text and not query_word:
        return None  # neither a call nor a query: cheap exit for ordinary strings
    where = f"a string passed to {_call_label(call)}()"
    try:
        statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
    except Exception:  # noqa: BLE001 - text that does not parse is data to sqlglot...
        if query_word:  # ...but PostgreSQL's parser may still read it: fail closed on a dangerous call
            for name in _CALLED_NAME.findall(text):
                if why := dangerous_function_reason(name, dialect, allowed):
                    return SafetyVerdict(False, f"{where} calls {name}(), which {why}", "dangerous_function")
        return None
    if postgres and any(_is_sql_text(s) for s in statements):
        return SafetyVerdict(False, f"{where} is a query, which PostgreSQL functions can run out of this check's sight",
                             "sql_in_string")
    for statement in statements:
        for node in statement.walk():
            if not isinstance(node, exp.Func):
                continue
            for name in _function_names(node):
                if why := dangerous_function_reason(name, dialect, allowed):
                    return SafetyVerdict(False, f"{where} calls {name}(), which {why}", "dangerous_function")
            if verdict := _string_arguments_verdict(node, text, dialect, allowed, depth + 1):
                return verdict
    return None


def _is_sql_text(statement: exp.Expression) -> bool:
    """A query or DML statement (not a lone keyword such as ``'select'``, which sqlglot
    parses as an empty SELECT)."""
    while isinstance(statement, (exp.Subquery, exp.Paren)) and isinstance(statement.this, exp.Expression):
        statement = statement.this
    if isinstance(statement, exp.Select):
        return bool(statement.expressions)
    if isinstance(statement, exp.Update):
        return bool(statement.expressions)
    return isinstance(statement, (*_ALLOWED_ROOTS, *_DATA_MODIFYING))


def _call_label(call: exp.Func) -> str:
    return call.name if isinstance(call, exp.Anonymous) else call.sql_name().lower()


def _is_sensitive_table(table: exp.Table) -> bool:
    name = table.name.lower()
    return name in _SENSITIVE_TABLES or (table.db.lower(), name) in _SENSITIVE_QUALIFIED


def _forbidden_rule(node: exp.Expression) -> tuple[str, str] | None:
    for classes, rule, does in _FORBIDDEN:
        if classes and isinstance(node, classes):
            return rule, does
    return None


_EXECUTABLE_COMMENT = re.compile(r"/\*M?!")


def _has_executable_comment(sql: str) -> bool:
    """MySQL runs the text of ``/*! ... */`` (MariaDB also ``/*M! ... */``) as SQL, while
    every parser, sqlglot's included, skips it as a comment. A match inside a string
    literal is harmless, so the tokenizer's comments decide."""
    if not _EXECUTABLE_COMMENT.search(sql):
        return False
    try:
        tokens = sqlglot.tokenize(sql, read="mysql")
    except SqlglotError:
        return True
    return any(comment.startswith(("!", "M!")) for token in tokens for comment in token.comments)


def _function_names(node: exp.Func) -> set[str]:
    """Every name this call may go by: its written name for unknown functions, the
    canonical names for functions sqlglot knows (``read_csv`` parses as ``ReadCSV``)."""
    if isinstance(node, exp.Anonymous):
        return {node.name.lower()}
    return {name.lower() for name in type(node).sql_names()}


_LABELS = {
    "TruncateTable": "TRUNCATE", "Into": "SELECT ... INTO", "Lock": "a FOR UPDATE / FOR SHARE clause",
    "Alias": "this statement", "Column": "this statement", "SetItem": "SET", "PropertyEQ": "a := assignment",
}


def _describe(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return f"the {str(node.this).upper()} command"
    name = type(node).__name__
    return _LABELS.get(name, name.upper())


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
