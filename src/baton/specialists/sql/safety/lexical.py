"""Fail closed where the engine has no parser we can ask (MySQL/MariaDB, SQLite).

Without the engine's own parser, the danger is text that the engine and sqlglot tokenise
differently: MariaDB reads ``--`` as a comment only when an ASCII space or control character
follows, sqlglot also after U+00A0, U+3000, U+2028, U+0085, so ``--\\u00a0x\\n, LOAD_FILE(...)``
hid a call from the check that the server ran. This module scans the text with the engine's
own lexical rules and refuses anything whose tokenisation could differ:

- any non-ASCII character, and any control character other than tab, newline and carriage
  return, outside string literals and quoted identifiers (engines disagree on which are
  spaces, which start identifiers); NUL anywhere;
- MySQL: ``--`` followed by a non-ASCII character or by nothing (MySQL reads two minus
  signs, as sqlglot does before printable ASCII, but sqlglot reads a comment before a
  Unicode space); executable comments ``/*!``/``/*M!``; a backslash outside a literal. (A
  line comment ends at the first newline for MySQL; sqlglot never reads one as longer, so
  its text is free.)
- a block comment containing ``/*`` (nesting rules differ between engines), an unterminated
  literal, identifier or comment.

String literals follow the session's ``sql_mode``. Baton pins it on every MySQL connection it
opens (``engines/mysql.py``: no ``ANSI_QUOTES``, no ``NO_BACKSLASH_ESCAPES``), so the rules here are
the ones the server applies: ``'`` and ``"`` delimit strings, a backslash escapes the next
character, a doubled quote is a quote. SQLite: ``'`` strings (doubled quote, no backslash
escapes), ``"``, backtick and ``[...]`` identifiers.

Then the two readings must agree: the closing offsets of every literal and quoted identifier
found here must equal those of sqlglot's tokens, and the number of comments too. sqlglot
tokenises the text once (``tokenize``); the same tokens feed its parser (``tree.py``).

The rules are the engine's (``Engine.safety.lexical``: its quotes, and MySQL's comment and
backslash rules as flags); the scan is the same for every engine.

Every scan here is linear: one pass, literals and comments skipped with ``str.find``, and
``called_names`` reads each identifier once (a pattern that re-scans an identifier from each
of its characters made a 20,000-character statement take 12 s).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from baton.specialists.sql.safety.work import add

if TYPE_CHECKING:
    from sqlglot.tokens import Token

    from baton.specialists.sql.engines.safety_rules import LexicalRules

_ALLOWED_CONTROLS = frozenset("\t\n\r")


@dataclass
class LexicalReading:
    hazard: tuple[str, str] | None = None
    quoted_ends: list[int] = field(default_factory=list)  # closing offset of each literal / quoted identifier
    comments: int = 0


class _Hazard(Exception):
    def __init__(self, reason: str, rule: str = "lexical_ambiguity"):
        self.reason, self.rule = reason, rule


def read_lexically(sql: str, rules: LexicalRules) -> LexicalReading:
    """Scan ``sql`` with the engine's lexical ``rules`` (``Engine.safety.lexical``)."""
    reading = LexicalReading()
    try:
        _scan(sql, rules, reading)
    except _Hazard as hazard:
        reading.hazard = (hazard.rule, hazard.reason)
    add(scanned=len(sql))
    return reading


def _scan(sql: str, rules: LexicalRules, reading: LexicalReading) -> None:
    if "\x00" in sql:
        raise _Hazard("a NUL character")
    delimiters = rules.quotes
    spaced_dashes, hashes, backslash = rules.spaced_dash_comments, rules.hash_comments, rules.backslash_outside_strings
    executable = rules.executable_comments
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in delimiters:
            close, escapes = delimiters[c]
            i = _quoted_end(sql, i, close, escapes)
            reading.quoted_ends.append(i)
        elif spaced_dashes and sql.startswith("--", i) and not (i + 2 < n and ord(sql[i + 2]) <= 32):
            if i + 2 >= n or ord(sql[i + 2]) > 126:
                raise _Hazard("`--` not followed by an ASCII space: MySQL reads two minus signs, other parsers a comment")
            i += 2  # `--x`: two minus signs to MySQL and to sqlglot alike
        elif c == "#" and hashes or sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            reading.comments += 1
            i = end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            if end < 0:
                raise _Hazard("an unterminated /* comment")
            if executable and sql.startswith(executable, i):
                raise _Hazard("a /*! ... */ comment is executed by MySQL and MariaDB as SQL", "executable_comment")
            if "/*" in sql[i + 2:end]:
                raise _Hazard("a comment inside a comment (engines nest them differently)")
            reading.comments += 1
            i = end + 1
        elif ord(c) > 126:
            raise _Hazard(f"the character U+{ord(c):04X} outside a string (engines disagree on what it is)")
        elif ord(c) < 32 and c not in _ALLOWED_CONTROLS:
            raise _Hazard(f"the control character U+{ord(c):04X} outside a string")
        elif c == "\\" and backslash:
            raise _Hazard("a backslash outside a string")
        i += 1


def _quoted_end(sql: str, start: int, close: str, backslash: bool) -> int:
    i, n = start + 1, len(sql)
    while i < n:
        c = sql[i]
        if backslash and c == "\\":
            i += 2
            continue
        if c == close:
            if i + 1 < n and sql[i + 1] == close and close != "]":
                i += 2
                continue
            return i
        i += 1
    raise _Hazard(f"an unterminated {sql[start]} literal or identifier")


def tokenize(sql: str, dialect: str) -> list[Token] | None:
    """sqlglot's tokens of ``sql`` (None when it cannot tokenise it)."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    add(parsed=len(sql))
    try:
        return sqlglot.tokenize(sql, read=dialect)
    except SqlglotError:
        return None


def sqlglot_agrees(tokens: list[Token] | None, reading: LexicalReading) -> str | None:
    """None when sqlglot's tokens put literals, quoted identifiers and comments where the
    engine's rules do; otherwise what differs."""
    if tokens is None:
        return "sqlglot cannot tokenise this text"
    add(nodes=len(tokens))
    ends = [t.end for t in tokens if t.token_type.name.endswith("STRING") or t.token_type.name == "IDENTIFIER"]
    if ends != reading.quoted_ends:
        return "sqlglot and the engine's rules read string literals or quoted names differently"
    if sum(len(t.comments) for t in tokens) != reading.comments:
        return "sqlglot and the engine's rules read comments differently"
    return None


# An identifier, then (possessively: no backtracking) an optional `"`, spaces and `(`. Every
# match consumes a whole identifier, so each character is read a bounded number of times.
_NAME_THEN_PAREN = re.compile(r'[A-Za-z_][A-Za-z0-9_$]*+(?>"?\s*+(\())?')


def called_names(text: str) -> Iterator[str]:
    """Each name in ``text`` followed by ``(`` (optionally after a closing ``"`` and spaces):
    what a text that no parser reads may call. Linear in ``len(text)``."""
    found = 0
    for match in _NAME_THEN_PAREN.finditer(text):
        found += 1
        if match.group(1) is not None:
            yield match.group(0)[: match.start(1) - match.start()].rstrip().rstrip('"')
    add(scanned=found + len(text))
