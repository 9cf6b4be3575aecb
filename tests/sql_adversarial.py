"""Adversarial SQL of a chosen length, for the safety check's scaling (the test and the bench).

Each generator builds one statement of about ``size`` characters that stresses one part of a
reader: a nesting stack, an identifier or literal scanner, a long argument or select list, a
left-deep operator chain, an unterminated token, many CTEs or set-operation branches. Both
``tests/test_sql_safety_scaling.py`` (a work count) and ``bench/sql_check_scaling.py`` (time)
use them, so the two measure the same inputs.
"""

from __future__ import annotations

from collections.abc import Callable


def _repeat(head: str, unit: str, tail: str, size: int) -> str:
    count = max(1, (size - len(head) - len(tail)) // len(unit))
    return head + unit * count + tail


def _nesting(size: int) -> str:
    depth = max(1, (size - 10) // 2)
    return "SELECT " + "(" * depth + "1" + ")" * depth


def _long_identifier(size: int) -> str:
    return "SELECT " + "a" * (size - 7)


def _identifier_in_string(size: int) -> str:
    # a string argument that does not parse: the fallback scan for called names reads it
    return "SELECT my_udf('(" + "a" * (size - 20) + "')"


def _call_in_string(size: int) -> str:
    return _repeat("SELECT my_udf('", "f(", "')", size)


def _concat_chain(size: int) -> str:
    depth = max(1, (size - 20) // 15)
    return "SELECT my_udf(" + "concat(" * depth + "'a'" + ", 'b')" * depth + ")"


def _pipe_chain(size: int) -> str:
    return _repeat("SELECT my_udf('a'", " || 'a'", ")", size)


def _many_strings(size: int) -> str:
    return _repeat("SELECT my_udf('f(x)'", ", 'f(x) g(y)'", ")", size)


def _distinct_strings(size: int) -> str:
    count = max(1, (size - 20) // 17)
    return "SELECT my_udf(" + ", ".join(f"'f({i}) g(y)'" for i in range(count)) + ")"


def _many_arguments(size: int) -> str:
    return _repeat("SELECT coalesce(1", ", 1", ")", size)


def _many_columns(size: int) -> str:
    count = max(1, (size - 20) // 12)
    return "SELECT " + ", ".join(f"{i} AS c{i}" for i in range(count))[: size - 20].rsplit(",", 1)[0]


def _in_list(size: int) -> str:
    return _repeat("SELECT 1 WHERE 1 IN (0", ", 1", ")", size)


def _unclosed_quote(size: int) -> str:
    return "SELECT 'a" + "a" * (size - 9)


def _unclosed_comment(size: int) -> str:
    return "SELECT 1 /* " + "a" * (size - 12)


def _operators(size: int) -> str:
    return _repeat("SELECT 1", " + 1", "", size)


def _long_literal(size: int) -> str:
    return "SELECT '" + "a " * ((size - 9) // 2) + "'"


def _ctes(size: int) -> str:
    count = max(1, (size - 20) // 28)
    return "WITH " + ", ".join(f"c{i} AS (SELECT {i} AS x)" for i in range(count)) + " SELECT x FROM c0"


def _unions(size: int) -> str:
    return _repeat("SELECT a FROM t", " UNION ALL SELECT a FROM t", "", size)


GENERATORS: dict[str, Callable[[int], str]] = {
    "nesting": _nesting,
    "long_identifier": _long_identifier,
    "identifier_in_string": _identifier_in_string,
    "call_in_string": _call_in_string,
    "concat_chain": _concat_chain,
    "pipe_chain": _pipe_chain,
    "many_strings": _many_strings,
    "distinct_strings": _distinct_strings,
    "many_arguments": _many_arguments,
    "many_columns": _many_columns,
    "in_list": _in_list,
    "unclosed_quote": _unclosed_quote,
    "unclosed_comment": _unclosed_comment,
    "operators": _operators,
    "long_literal": _long_literal,
    "ctes": _ctes,
    "unions": _unions,
}
