"""sqlglot's reading of a statement, and the rules applied to its tree.

For MySQL/MariaDB and SQLite this is the check (after ``lexical.py`` has refused any text the
engine could tokenise differently); for PostgreSQL and DuckDB it is the second opinion beside
the engine's own parser, and its tree is what schema pre-validation and the row cap use.

Rules (a whitelist, failing closed):
- One statement whose root is SELECT, a set operation (UNION / INTERSECT / EXCEPT), VALUES,
  or a parenthesised one of those; a WITH clause hangs off that root in sqlglot, so
  ``WITH ... SELECT`` is allowed and ``WITH ... INSERT`` is not. Read-only statements of other
  shapes (SHOW, DESCRIBE, EXPLAIN, PIVOT statements) are refused too: the agent can always say
  the same as a SELECT, and a whitelist cannot be surprised by a new statement type.
- The whole tree is walked, so a write hidden in a CTE, a subquery or a set-operation branch
  is found. Anything sqlglot only parses as an opaque ``Command`` is refused, and so is
  anything that does not parse (MySQL ``INTO OUTFILE``, ``LOAD DATA``).
- Text inside string literals and comments is data (``'please DELETE later'``).
- Functions: ``functions.py`` decides on each name. Relations: ``relations.py``. DuckDB reads
  any table name that looks like a path (``FROM 'data.csv'``): where the engine does
  (``Engine.safety.reads_file_paths``), such names are refused.
- SQL given as a string, where no engine parser reads the strings (MySQL, SQLite): a call
  whose constant string argument parses as SQL calling a refused function is refused
  (``sql_in_string``); a string that is not a function argument stays data.
- Sequence writers, xid assignment, ``:=`` on session variables are writes.

Linear time: the tree is walked once (breadth first, as the refusals are ordered), after one
depth-first pass that marks the references to a CTE in scope (climbing each table's ancestors
was quadratic in a long UNION chain); texts no parser reads are scanned by
``lexical.called_names``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from baton.specialists.sql.literals import constant_text, string_arguments
from baton.specialists.sql.safety.functions import ARGUMENT_CHECKED, call_refusal, denied_reason
from baton.specialists.sql.safety.lexical import called_names
from baton.specialists.sql.safety.metadata import variable_refusal
from baton.specialists.sql.safety.reading import Reading
from baton.specialists.sql.safety.relations import Relation, RelationPolicy
from baton.specialists.sql.safety.relations import refusal as relation_refusal
from baton.specialists.sql.safety.verdict import SafetyVerdict, refuse
from baton.specialists.sql.safety.work import add

if TYPE_CHECKING:
    from sqlglot.tokens import Token

    from baton.specialists.sql.engines.safety_rules import SafetyRules


def _classes(*names: str) -> tuple[type[exp.Expr], ...]:
    """The sqlglot node classes that exist in this sqlglot version (names move between
    releases; a missing one must not break the import)."""
    return tuple(getattr(exp, n) for n in names if isinstance(getattr(exp, n, None), type))


ALLOWED_ROOTS = _classes("Select", "SetOperation", "Union", "Intersect", "Except", "Values")

# Node class -> (rule, what it does). The first match wins.
_FORBIDDEN: tuple[tuple[tuple[type[exp.Expr], ...], str, str], ...] = (
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

_PATH_CHARACTERS = frozenset("./\\:*?")
# A tree nested deeper is refused, as SQLite and DuckDB refuse an expression 1,000 deep: what
# reads sqlglot's tree after the check (the row cap, pre-validation) recurses.
MAX_TREE_DEPTH = 1_000
# sqlglot could not make sense of the statement (as opposed to finding something wrong in it)
UNREADABLE_RULES = frozenset({"unparseable", "command"})


def read_tree(
    sql: str,
    dialect: str,
    rules: SafetyRules,
    *,
    allowed: frozenset[str] = frozenset(),
    relations: RelationPolicy | None = None,
    inspect_strings: bool = True,
    tokens: list[Token] | None = None,
) -> tuple[SafetyVerdict, Reading | None]:
    """sqlglot's verdict on ``sql`` and its reading (None when it did not parse), ``dialect``
    being the engine's sqlglot dialect and ``rules`` its ``Engine.safety``. ``tokens``:
    sqlglot's tokens of ``sql`` when the caller has them (the text is not tokenised again)."""
    try:
        statements = [s for s in _parse(sql, dialect, tokens) if s is not None]
    except SqlglotError as error:
        return refuse("unparseable", f"the statement does not parse as {dialect} SQL: {_first_line(error)}"), None
    except Exception as error:
        return refuse("unparseable", f"the parser failed on this statement ({type(error).__name__})"), None
    reading = Reading("sqlglot", statements=len(statements))
    if not statements:
        return refuse("empty", "there is no statement to run"), reading
    if len(statements) > 1:
        return refuse("multiple_statements", f"only one statement may run at a time; found {len(statements)}"), reading
    statement = statements[0]
    root = statement
    while isinstance(root, (exp.Subquery, exp.Paren)) and isinstance(root.this, exp.Expression):
        root = root.this
    if not isinstance(root, ALLOWED_ROOTS):
        rule, does = _forbidden_rule(root) or ("not_a_query", "is not a query")
        return refuse(rule, f"{_describe(root)} {does}; only SELECT, set operations and VALUES may run"), reading
    cte_references = _cte_references(statement)
    if cte_references is None:
        return refuse("unparseable", f"the statement nests more than {MAX_TREE_DEPTH:,} levels deep (SQLite and "
                                     "DuckDB refuse such statements too)"), reading
    for node in statement.walk():
        add(nodes=1)
        _record(node, reading)
        if verdict := _check_node(node, sql, dialect, rules, allowed, relations, inspect_strings, cte_references):
            return verdict, reading
    return SafetyVerdict(True, "a single read-only query", "", statement), reading


def _parse(sql: str, dialect: str, tokens: list[Token] | None) -> list[exp.Expr | None]:
    if tokens is None:
        add(parsed=len(sql))
        return sqlglot.parse(sql, read=dialect)
    from sqlglot.dialects.dialect import Dialect

    add(nodes=len(tokens))
    return Dialect.get_or_raise(dialect).parser().parse(tokens, sql)


def _record(node: exp.Expr, reading: Reading) -> None:
    if isinstance(node, exp.Anonymous):
        reading.functions.add(node.name.lower())
    elif isinstance(node, exp.CTE) and node.alias:
        reading.ctes.add(node.alias)
    elif isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        reading.relations.add(Relation(node.name, node.db or None, node.catalog or None))


def _check_node(
    node: exp.Expr, sql: str, dialect: str, rules: SafetyRules, allowed: frozenset[str],
    relations: RelationPolicy | None, inspect_strings: bool, cte_references: set[int],
) -> SafetyVerdict | None:
    if found := _forbidden_rule(node):
        rule, does = found
        if rule == "write_statement" and node.find_ancestor(exp.CTE) is not None:
            return refuse("data_modifying_cte", f"a CTE {does} ({_describe(node)} inside WITH)")
        return refuse(rule, f"{_describe(node)} {does}")
    if isinstance(node, exp.PropertyEQ) and isinstance(node.this, exp.Parameter):
        return refuse("set", f"{_describe(node)} sets a session variable")
    if isinstance(node, exp.SessionParameter) and (found := variable_refusal(node.name)):
        return refuse(*found)  # @@datadir and other server paths (metadata.py)
    if isinstance(node, exp.Func):
        arguments = None
        for name in function_names(node):
            if name in ARGUMENT_CHECKED and arguments is None:
                arguments = [constant_text(a, dialect, sql) for a in node.iter_expressions()]
            if why := call_refusal(name, arguments if name in ARGUMENT_CHECKED else (), rules, allowed):
                return refuse("dangerous_function", f"the function {name}() {why}")
        if inspect_strings and (verdict := _string_arguments_verdict(node, sql, dialect, rules, allowed, depth=0)):
            return verdict
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        if rules.reads_file_paths and _PATH_CHARACTERS.intersection(node.name):
            return refuse("file_read", f"the table name {node.name!r} is a file path or URL, which DuckDB would read")
        relation = Relation(node.name, node.db or None, node.catalog or None)
        if found := relation_refusal(relation, rules, None if id(node) in cte_references else relations):
            return refuse(*found)
    return None


def _cte_references(statement: exp.Expr) -> set[int] | None:
    """The ids of the unqualified table references that name a CTE of an enclosing WITH (only
    the secrets rule applies to them); None when the tree is deeper than ``MAX_TREE_DEPTH``.
    One depth-first pass, the CTE names in scope counted; the stack holds one iterator per
    level, so its size is the tree's depth, not its width."""
    references: set[int] = set()
    in_scope: dict[str, int] = {}
    frames: list[tuple[Iterator[exp.Expr], list[str]]] = [(iter((statement,)), [])]
    while frames:
        children, names = frames[-1]
        node = next(children, None)
        if node is None:
            frames.pop()
            for name in names:  # the WITH whose children these were goes out of scope
                in_scope[name] -= 1
            continue
        add(nodes=1)
        if len(frames) > MAX_TREE_DEPTH:
            return None
        if isinstance(node, exp.Table) and not node.db and in_scope.get(node.name.lower(), 0) > 0:
            references.add(id(node))
        with_ = node.args.get("with_") or node.args.get("with") if isinstance(node, exp.Query) else None
        own = [cte.alias.lower() for cte in with_.expressions] if isinstance(with_, exp.With) else []
        for name in own:
            in_scope[name] = in_scope.get(name, 0) + 1
        frames.append((node.iter_expressions(), own))
    return references


# --- SQL hidden in the string arguments of a call ----------------------------------------

_MAX_STRING_DEPTH = 3  # a string inside a string inside a string... beyond this, refuse


def _string_arguments_verdict(
    call: exp.Func, source: str, dialect: str, rules: SafetyRules, allowed: frozenset[str], depth: int
) -> SafetyVerdict | None:
    """Refuse a call whose constant string arguments are SQL calling a refused function."""
    for text in string_arguments(call, dialect, source):
        if depth >= _MAX_STRING_DEPTH:
            return refuse("sql_in_string", f"SQL text nested {depth} strings deep cannot be checked")
        if "(" not in text:
            continue  # not a call: cheap exit for ordinary strings
        where = f"a string passed to {_call_label(call)}()"
        add(parsed=len(text))
        try:
            statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
        except Exception:
            for name in called_names(text):
                if why := denied_reason(name, rules, allowed):
                    return refuse("dangerous_function", f"{where} calls {name}(), which {why}")
            continue
        for statement in statements:
            for node in statement.walk():
                add(nodes=1)
                if not isinstance(node, exp.Func):
                    continue
                for name in function_names(node):
                    if why := denied_reason(name, rules, allowed):
                        return refuse("dangerous_function", f"{where} calls {name}(), which {why}")
                if verdict := _string_arguments_verdict(node, text, dialect, rules, allowed, depth + 1):
                    return verdict
    return None


def _call_label(call: exp.Func) -> str:
    return call.name if isinstance(call, exp.Anonymous) else call.sql_name().lower()


_ANY_FORBIDDEN = tuple(c for classes, _, _ in _FORBIDDEN for c in classes)


def _forbidden_rule(node: exp.Expr) -> tuple[str, str] | None:
    if not isinstance(node, _ANY_FORBIDDEN):
        return None
    for classes, rule, does in _FORBIDDEN:
        if classes and isinstance(node, classes):
            return rule, does
    return None


def function_names(node: exp.Func) -> set[str]:
    """Every name this call may go by: its written name for unknown functions, the
    canonical names for functions sqlglot knows (``read_csv`` parses as ``ReadCSV``)."""
    if isinstance(node, exp.Anonymous):
        return {node.name.lower()}
    return {name.lower() for name in type(node).sql_names()}


_LABELS = {
    "TruncateTable": "TRUNCATE", "Into": "SELECT ... INTO", "Lock": "a FOR UPDATE / FOR SHARE clause",
    "Alias": "this statement", "Column": "this statement", "SetItem": "SET", "PropertyEQ": "a := assignment",
}


def _describe(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return f"the {str(node.this).upper()} command"
    name = type(node).__name__
    return _LABELS.get(name, name.upper())


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
