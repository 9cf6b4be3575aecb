"""What a verified question's SQL says about it, and binding its slots into the SQL.

``sql_terms`` reads the SQL once (sqlglot, any dialect it parses): the names of the columns
it returns, the tables it reads, which returned columns are measures (an aggregate or
arithmetic), and the direction of its ranking (``ORDER BY`` a measure ``DESC`` -> "most",
``ASC`` -> "least"). SQL that does not parse implies nothing.

``bind`` changes only literal tokens of the SQL (found by sqlglot's tokenizer, with their
exact positions), so the statement keeps the shape that was checked; the new values are
digits (years, limits) or a declared choice (letters, digits, spaces, ``_.-``), never text
from the question itself. The bound SQL still goes through every safety check.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import replace

from baton.verified.question import MAX_LIMIT, Slot, SlotError, VerifiedQuestion

_YEAR_IN_LITERAL = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")


@functools.lru_cache(maxsize=2048)
def sql_terms(sql: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str | None]:
    """(output column names, table names, measure column names, "most"/"least"/None)."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return (), (), (), None
    if not isinstance(tree, exp.Query):
        return (), (), (), None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    tables = tuple(sorted({t.name for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes}))
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return (), tables, (), None
    outputs, measures = [], []
    for projection in select.expressions:
        name = projection.alias_or_name
        if not name or name == "*":
            continue
        outputs.append(name)
        body = projection.this if isinstance(projection, exp.Alias) else projection
        if body.find(exp.AggFunc) is not None or body.find(exp.Add, exp.Sub, exp.Mul, exp.Div) is not None:
            measures.append(name)
    direction = None
    order = tree.args.get("order")
    if order is not None and order.expressions:
        first = order.expressions[0]
        key = first.this
        key_name = key.name if isinstance(key, exp.Column) else None
        is_measure = (key_name in measures) or key.find(exp.AggFunc) is not None
        if is_measure:
            direction = "most" if first.args.get("desc") else "least"
    return tuple(outputs), tables, tuple(measures), direction


def _tokens(sql: str):
    from sqlglot.tokens import Tokenizer

    try:
        return Tokenizer().tokenize(sql)
    except Exception as exc:  # sqlglot raises TokenError, and occasionally ValueError
        raise SlotError(f"the verified SQL cannot be read: {exc}") from None


def _splice(sql: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, text in sorted(edits, reverse=True):
        sql = sql[:start] + text + sql[end + 1:]
    return sql


def bind_year(sql: str, default: str, value: str) -> str:
    """Every year literal within one year of ``default`` moved by ``value - default``."""
    from sqlglot.tokens import TokenType

    if not re.fullmatch(r"(19|20)\d\d", value):
        raise SlotError(f"{value!r} is not a year")
    offset = int(value) - int(default)
    edits = []
    for token in _tokens(sql):
        if token.token_type not in (TokenType.STRING, TokenType.NUMBER):
            continue
        text = sql[token.start:token.end + 1]
        moved = _YEAR_IN_LITERAL.sub(
            lambda m: str(int(m.group(1)) + offset) if abs(int(m.group(1)) - int(default)) <= 1 else m.group(1), text)
        if moved != text:
            edits.append((token.start, token.end, moved))
    if not edits:
        raise SlotError(f"the year {default} is not among the SQL's literals")
    return _splice(sql, edits)


def bind_limit(sql: str, value: str) -> str:
    """The outermost LIMIT set to ``value`` (added when there is none)."""
    from sqlglot.tokens import TokenType

    n = int(value)
    if not 1 <= n <= MAX_LIMIT:
        raise SlotError(f"a limit must be between 1 and {MAX_LIMIT}")
    tokens = _tokens(sql)
    depth, last_limit = 0, None
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif token.token_type == TokenType.LIMIT and depth == 0:
            last_limit = i
    if last_limit is not None:
        following = tokens[last_limit + 1] if last_limit + 1 < len(tokens) else None
        if following is None or following.token_type != TokenType.NUMBER:
            raise SlotError("the verified SQL's LIMIT is not a plain number")
        return _splice(sql, [(following.start, following.end, str(n))])
    body = sql.rstrip().rstrip(";").rstrip()
    return f"{body} LIMIT {n}"


def bind_choice(sql: str, slot: Slot, value: str) -> str:
    """The literal compared with ``slot.column`` replaced by the choice's literal."""
    from sqlglot.tokens import TokenType

    choices = dict(slot.choices)
    old, new = choices.get(slot.default), choices.get(value)
    if old is None or new is None:
        raise SlotError(f"{value!r} is not a choice of slot {slot.name!r}")
    tokens = _tokens(sql)
    edits = []
    for i in range(2, len(tokens)):
        literal, op, column = tokens[i], tokens[i - 1], tokens[i - 2]
        if op.token_type != TokenType.EQ or column.text.lower() != slot.column.lower():
            continue
        if literal.token_type == TokenType.NUMBER and literal.text == old:
            edits.append((literal.start, literal.end, new if re.fullmatch(r"-?\d+(\.\d+)?", new) else f"'{new}'"))
        elif literal.token_type == TokenType.STRING and literal.text == old:
            edits.append((literal.start, literal.end, f"'{new}'"))
    if not edits:
        raise SlotError(f"no '{slot.column} = {old}' in the verified SQL")
    return _splice(sql, edits)


def _rename(question: str, slot: Slot, value: str) -> str:
    if slot.kind == "year":
        return re.sub(rf"(?<!\d){slot.default}(?!\d)", value, question)
    if slot.kind == "choice":
        return re.sub(rf"\b{re.escape(slot.default)}\b", value, question, flags=re.IGNORECASE)
    return question.rstrip() + f" (top {value})"


def bind(verified: VerifiedQuestion, values: Mapping[str, str]) -> VerifiedQuestion:
    """A copy of ``verified`` with ``values`` (slot name -> value) bound in its SQL and its
    question; ``SlotError`` when a value does not fit."""
    sql, question = verified.sql, verified.question
    for slot in verified.slots:
        if slot.name not in values:
            continue
        value = values[slot.name]
        if slot.kind == "year":
            if value == slot.default:
                continue
            sql = bind_year(sql, slot.default, value)
        elif slot.kind == "limit":
            sql = bind_limit(sql, value)
        else:
            if value.lower() == slot.default.lower():
                continue
            sql = bind_choice(sql, slot, value)
        question = _rename(question, slot, value)
    if sql == verified.sql:
        return verified
    return replace(verified, question=question, sql=sql, template=verified.checked_question,
                   bindings=tuple(sorted(values.items())))


def check_slots(verified: VerifiedQuestion) -> None:
    """``SlotError`` unless every slot can be bound (its default is in the question and in
    the SQL), as checked when a verified question is added."""
    for slot in verified.slots:
        if slot.kind == "year":
            if not re.search(rf"(?<!\d){slot.default}(?!\d)", verified.question):
                raise SlotError(f"slot {slot.name!r}: the year {slot.default} is not in the question")
            probe = "1999" if slot.default != "1999" else "1998"
            bind_year(verified.sql, slot.default, probe)
        elif slot.kind == "limit":
            bind_limit(verified.sql, "5")
            if sql_terms(verified.sql)[3] is None:
                raise SlotError(f"slot {slot.name!r}: a top-N limit needs the SQL ranked by a measure (ORDER BY ...)")
        else:
            if not re.search(rf"\b{re.escape(slot.default)}\b", verified.question, re.IGNORECASE):
                raise SlotError(f"slot {slot.name!r}: {slot.default!r} is not in the question")
            other = next((w for w, _ in slot.choices if w != slot.default), None)
            if other is not None:
                bind_choice(verified.sql, slot, other)


__all__ = ["bind", "bind_choice", "bind_limit", "bind_year", "check_slots", "sql_terms"]
