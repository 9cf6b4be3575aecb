"""What the safety check says about a statement, and the error that carries a refusal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from baton.errors import AgentFatalError

if TYPE_CHECKING:
    from sqlglot import exp


@dataclass(frozen=True, slots=True)
class SafetyVerdict:
    """The outcome of ``check_safety``.

    ``rule`` is a stable code a program can switch on ("" when safe): empty, unparseable,
    multiple_statements, not_a_query, write_statement, data_modifying_cte, select_into, ddl,
    privilege, copy, command, set, pragma, attach, transaction, locking_clause,
    side_effect_statement, dangerous_function, file_read, executable_comment, sensitive_table,
    sql_in_string, relation_not_allowed, lexical_ambiguity, parsers_disagree, definer_routine,
    too_long (over ``MAX_STATEMENT_LENGTH`` characters: refused before any parser reads it).
    ``statement`` is sqlglot's reading of the query when sqlglot could read it (used by schema
    pre-validation and the row cap); it is None when only the engine's own parser could.
    """

    safe: bool
    reason: str
    rule: str = ""
    statement: exp.Expr | None = None


class UnsafeQueryError(AgentFatalError):
    """A statement failed the safety check. Fatal: unsafe SQL is never retried."""

    def __init__(self, verdict: SafetyVerdict):
        super().__init__(f"unsafe SQL ({verdict.rule}): {verdict.reason}")
        self.verdict = verdict


def refuse(rule: str, reason: str) -> SafetyVerdict:
    return SafetyVerdict(False, reason, rule)
