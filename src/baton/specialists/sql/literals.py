"""The text a string literal holds, as the engine will read it, for the arguments of a call.

The safety check looks inside strings passed to functions (some PostgreSQL functions run
SQL given as text, see ``safety.py``). What it inspects must be the value the engine sees,
not the spelling: ``E'\\x53ELECT ...'`` and ``U&'\\0053ELECT ...'`` are both ``SELECT ...``
to PostgreSQL, while sqlglot keeps their escapes undecoded. This module decodes them.

Only constant text is recovered: a literal, possibly cast, parenthesised, named
(``arg => '...'``) or concatenated from literals only. Text built at run time (from
columns, ``chr()``, subqueries) cannot be known before the query runs; that is why the
functions that run SQL text are also refused by name, whatever their arguments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sqlglot import exp

from baton.specialists.sql.engines import engine_named

_WRAPPERS = tuple(
    getattr(exp, n) for n in ("Cast", "TryCast", "Paren", "Collate", "Kwarg", "PropertyEQ")
    if isinstance(getattr(exp, n, None), type)
)

_C_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_C_ESCAPE_OR_QUOTE = re.compile(_C_ESCAPE.pattern + "|''", re.S)
_E_STRING = re.compile(r"[eE]'(.*)'", re.S)
_U_STRING = re.compile(r"[uU]&'(.*)'", re.S)
_SIMPLE_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def string_arguments(call: exp.Func, dialect: str, source: str = "") -> Iterator[str]:
    """The constant text of each argument of ``call`` that is a string. ``source`` is the
    SQL ``call`` was parsed from (escaped strings are decoded from their spelling there)."""
    for argument in call.iter_expressions():
        text = constant_text(argument, dialect, source)
        if text is not None:
            yield text


# deeper concatenations are not read as constants (each level is a call of its own, read in
# turn): a bound keeps a walk that reads every call's arguments linear
_MAX_CONCATENATION_DEPTH = 16


def constant_text(node: exp.Expr, dialect: str, source: str = "", _depth: int = 0) -> str | None:
    """The string ``node`` evaluates to when that is known without running it, else None.

    sqlglot already folds ``\\`` and ``\'`` in ``E'...'`` strings but keeps every other
    escape, so its text is ambiguous (``\x53`` may have been spelled ``\\x53``); the
    spelling in ``source`` is decoded instead when the node's position is known. Without
    it, escapes are decoded from sqlglot's text, which can only over-decode."""
    while isinstance(node, _WRAPPERS):
        inner = node.args.get("expression") if isinstance(node, (exp.Kwarg, exp.PropertyEQ)) else node.this
        if not isinstance(inner, exp.Expression):
            return None
        node = inner
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else None
    if isinstance(node, (exp.RawString, exp.National)):
        return str(node.this)
    if isinstance(node, exp.ByteString):  # E'...' strings (PostgreSQL, DuckDB)
        if not engine_named(dialect).escape_strings:
            return str(node.this)
        spelled = _spelling(node, source, _E_STRING)
        return decode_c_escapes(spelled, quotes=True) if spelled is not None else decode_c_escapes(str(node.this))
    if isinstance(node, exp.UnicodeString):
        escape = node.args.get("escape")
        spelled = _spelling(node, source, _U_STRING)
        raw = spelled.replace("''", "'") if spelled is not None else str(node.this)
        return decode_unicode_escapes(raw, escape.name if isinstance(escape, exp.Literal) else "\\")
    if isinstance(node, (exp.DPipe, exp.Concat)) and _depth < _MAX_CONCATENATION_DEPTH:
        parts = [constant_text(part, dialect, source, _depth + 1) for part in node.iter_expressions()]
        return "".join(parts) if parts and all(p is not None for p in parts) else None  # type: ignore[arg-type]
    return None


def decode_c_escapes(raw: str, *, quotes: bool = False) -> str:
    """PostgreSQL's E'...' escapes: ``\\n``, ``\\ooo``, ``\\xhh``, ``\\uXXXX``, ``\\UXXXXXXXX``;
    any other backslashed character stands for itself; with ``quotes``, ``''`` is one quote
    (the text is the literal's spelling, between its quotes)."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "''":
            return "'"
        octal, hexa, u4, u8, other = match.groups()
        if other is not None:
            return _SIMPLE_ESCAPES.get(other, other)
        return _char(int(octal, 8) if octal else int(hexa or u4 or u8, 16))

    return (_C_ESCAPE_OR_QUOTE if quotes else _C_ESCAPE).sub(one, raw)


def decode_unicode_escapes(raw: str, escape: str = "\\") -> str:
    """PostgreSQL's U&'...' escapes (``\\XXXX``, ``\\+XXXXXX``, a doubled escape character),
    with the escape character ``UESCAPE`` names."""
    if len(escape) != 1:
        return raw
    e = re.escape(escape)
    pattern = re.compile(f"{e}(?:({e})|\\+([0-9A-Fa-f]{{6}})|([0-9A-Fa-f]{{4}}))")
    return pattern.sub(lambda m: escape if m.group(1) else _char(int(m.group(2) or m.group(3), 16)), raw)


def _char(code: int) -> str:
    try:
        return chr(code)
    except (ValueError, OverflowError):
        return "\ufffd"


def _spelling(node: exp.Expr, source: str, form: re.Pattern[str]) -> str | None:
    """The text between the quotes of ``node`` as written in ``source``, if it is known."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if not source or not isinstance(start, int) or not isinstance(end, int):
        return None
    match = form.fullmatch(source[start:end + 1])
    return match.group(1) if match else None
