"""What a follow-up asks of the previous answer, read without a model.

``read_followup(question, previous_result)`` returns an ``Intent`` or None:

==============  ===========================================================================
kind            examples
==============  ===========================================================================
``chart``       "Show this as a pie chart", "make it a line chart"
``top``         "Show only the top 5", "top 3 by profit", "just the first 10"
``bottom``      "Show the bottom 3", "the 5 lowest", "worst 2"
``sort``        "Sort by revenue", "order by product ascending", "sort it by city"
``filter``      "Only Madrid", "filter to Ink Bottle 104", "just Epson" (a value the result holds)
``share``       "Show percentage breakdown", "as a share of the total", "percent of total"
``regroup``     "Break this down by quarter", "show it by year", "quarterly"
``compare``     "Compare with the previous period", "change from the previous month"
``other``       refers to the previous answer ("this", "these", "it" ...) or asks for an
                analysis ("What is the trend over time?", "why", "average instead") but none
                of the above: with a model the orchestrator answers it; without one, it
                needs a model
==============  ===========================================================================

Decisions: a complete new question (``is_new_question``) is never a follow-up; otherwise a
question is read as a follow-up only when it points back at the answer ("this",
"these", "it", "that" ...) or uses no word of its own beyond the follow-up's vocabulary, the
result's column names and values: "Show the top 10 products" is a new question, "Show only
the top 5" is not. Columns are named by their result name, with or without underscores,
case-insensitively. A filter value must be one the result holds (compared case-insensitively
with the words of each text cell), so the SQL gets the result's own value, never the
question's text. Longer than ``MAX_FOLLOWUP_CHARS`` is a new question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from baton.response import QueryResult

MAX_FOLLOWUP_CHARS = 200
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                "twenty": 20}
_NUM = r"(\d{1,4}|" + "|".join(NUMBER_WORDS) + r")"
_CHART = re.compile(
    r"\b(?:show|display|draw|plot|make|turn|render|view|see|put|give|chart)\b.*?\b(?:as|into|in|like|a|an)\s+(?:an?\s+)?"
    r"(pie|bar|line|scatter|area|table|big[- ]number)(?:\s+(?:chart|graph|plot|view))?\b|^\s*(pie|bar|line)\s+chart\b",
    re.IGNORECASE,
)
_TOP = re.compile(rf"\b(?:top|first|best|largest|biggest|highest)\s+{_NUM}\b|\b{_NUM}\s+(?:best|largest|biggest|highest)\b", re.IGNORECASE)
_BOTTOM = re.compile(rf"\b(?:bottom|last|worst|smallest|lowest|least)\s+{_NUM}\b|\b{_NUM}\s+(?:worst|smallest|lowest)\b", re.IGNORECASE)
_SORT = re.compile(r"\b(?:sort|order|rank|arrange)\w*\b(?:\s+(?:it|this|these|them|the\s+rows|the\s+result))?\s+by\s+(.+)$", re.IGNORECASE)
_DESC = re.compile(r"\b(desc|descending|highest\s+first|largest\s+first|biggest\s+first|high\s+to\s+low|reverse)\b", re.IGNORECASE)
_ASC = re.compile(r"\b(asc|ascending|lowest\s+first|smallest\s+first|low\s+to\s+high|alphabetical\w*|a\s*-\s*z)\b", re.IGNORECASE)
_SHARE = re.compile(r"\b(percentage|percent|share|proportion|%)\b(?:.*\b(breakdown|of\s+(?:the\s+)?total|total))?|"
                    r"\bpercentage\s+breakdown\b|\bshare\s+of\s+(?:the\s+)?total\b", re.IGNORECASE)
_REGROUP = re.compile(r"\b(?:by|per|into|to|each)\s+(day|week|month|quarter|year)s?\b|\b(daily|weekly|monthly|quarterly|yearly|annually|annual)\b",
                      re.IGNORECASE)
_COMPARE = re.compile(r"\bcompar\w*\b.*\b(previous|prior|last|preceding)\b|\b(change|difference|growth)\b.*\b(previous|prior|preceding)\b|"
                      r"\b(previous|prior)\s+(period|month|quarter|year)\b", re.IGNORECASE)
_FILTER = re.compile(r"^\s*(?:(?:and\s+)?(?:now\s+)?(?:show\s+|give\s+me\s+|keep\s+)?(?:only|just)|filter(?:\s+(?:it|this|them))?\s+(?:to|on|for|by)|"
                     r"keep\s+only|limit\s+(?:it\s+)?to|what\s+about)\s+(?:the\s+)?(.+?)\s*[?.!]*$", re.IGNORECASE)
_BACK_REFERENCE = re.compile(r"\b(?:this|that|it|these|those|same|previous|above|them|result|results)\b", re.IGNORECASE)
FOLLOWUP_WORDS = frozenset(
    "show display draw plot make turn render view see put as into in like an a the chart graph pie bar line scatter area "
    "table big number only just top first best largest biggest highest bottom last worst smallest lowest least give keep "
    "limit result results row rows please now instead can could you me i want sort sorted order ordered rank arrange by "
    "asc desc ascending descending high low to first filter on for percentage percent share proportion breakdown break "
    "down of total day days week weeks month months quarter quarters year years daily weekly monthly quarterly yearly "
    "annual annually compare compared "
    "comparison with previous prior preceding period change difference growth and what about over".split()
) | frozenset(NUMBER_WORDS)
# Words of analyses only a model can do on the answer ("What is the trend over time?",
# "Why did it drop?", "Average instead of count?"): read as a follow-up that needs a model.
ANALYSIS_WORDS = frozenset("trend trends why explain average mean forecast predict prediction instead count time "
                           "happened cause reason seasonality correlation".split())
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Intent:
    kind: str
    n: int | None = None
    column: str | None = None
    descending: bool | None = None
    value: Any = None
    unit: str | None = None
    chart: str | None = None


def _number(raw: str) -> int:
    raw = raw.lower()
    return NUMBER_WORDS.get(raw) or int(raw)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _column_words(result: QueryResult) -> set[str]:
    out: set[str] = set()
    for column in result.columns:
        out |= _words(str(column).replace("_", " ")) | {str(column).lower()}
    return out


def _value_words(result: QueryResult, limit: int = 2000) -> set[str]:
    out: set[str] = set()
    for row in result.rows[:limit]:
        for value in row:
            if isinstance(value, str) and len(value) <= 80:
                out |= _words(value)
    return out


def refers_back(question: str, result: QueryResult | None) -> bool:
    """True when ``question`` points at the previous answer (module docstring)."""
    if _BACK_REFERENCE.search(question):
        return True
    own = {w for w in _words(question) if not w.isdigit()} - FOLLOWUP_WORDS - ANALYSIS_WORDS - {"is", "was", "did", "does", "do"}
    if result is not None:
        own -= _column_words(result) | _value_words(result)
    return not own


_OPENER = re.compile(r"^\s*(?:how\s+(?:many|much)|what|which|who|whose|when|where|list|name|tell\s+me)\b", re.IGNORECASE)
_EDIT_OPENER = re.compile(r"^\s*(?:what|how)\s+about\b", re.IGNORECASE)
_EDIT_CUE = re.compile(r"\b(?:instead|rather|only|just|also|add|plus|compare|compared|vs|versus|again|too)\b", re.IGNORECASE)
_AUXILIARY = frozenset("is was were are did does do has have had many much how which who whose when where list name tell".split())


def is_new_question(question: str) -> bool:
    """True for a complete new question ("How many orders by month in 2025?", "What was
    revenue by year?"): it opens as a question, points at nothing before it and says more
    than the follow-up vocabulary. It is never read as an edit of the previous answer, even
    when every word of it could be one (the semantic parser hears "orders" as "order by")."""
    if not _OPENER.search(question) or _EDIT_OPENER.search(question):
        return False
    if _BACK_REFERENCE.search(question) or _EDIT_CUE.search(question):
        return False
    return bool({w for w in _words(question) if not w.isdigit()} - FOLLOWUP_WORDS - ANALYSIS_WORDS - _AUXILIARY)


def find_column(text: str, result: QueryResult) -> str | None:
    """The result column ``text`` names (exact, then without underscores), if any."""
    wanted = " ".join(_WORD.findall(text.lower()))
    if not wanted:
        return None
    by_name = {" ".join(_WORD.findall(str(c).lower().replace("_", " "))): c for c in result.columns}
    if wanted in by_name:
        return by_name[wanted]
    for name, column in by_name.items():  # "sort by revenue descending": the column is a prefix
        if wanted.startswith(name + " ") or wanted.endswith(" " + name) or f" {name} " in f" {wanted} ":
            return column
    return None


def find_value(text: str, result: QueryResult) -> tuple[str, Any] | None:
    """(column, value) for a text cell ``text`` names (whole words, case-insensitive); None
    when no cell or more than one distinct value matches."""
    wanted = " ".join(_WORD.findall(text.lower()))
    if not wanted:
        return None
    found: dict[tuple[str, Any], None] = {}
    for row in result.rows[:5000]:
        for column, value in zip(result.columns, row):
            if isinstance(value, str) and " ".join(_WORD.findall(value.lower())) == wanted:
                found[(column, value)] = None
    return next(iter(found)) if len(found) == 1 else None


def read_followup(question: str, result: QueryResult | None) -> Intent | None:
    """The follow-up ``question`` asks of ``result`` (module docstring), or None."""
    if len(question) > MAX_FOLLOWUP_CHARS or result is None or is_new_question(question) or not refers_back(question, result):
        return None
    if m := _CHART.search(question):
        return Intent("chart", chart=(m.group(1) or m.group(2)).lower().replace(" ", "_").replace("-", "_"))
    by = re.search(r"\bby\s+(.+?)\s*[?.!]*$", question, re.IGNORECASE)
    named = find_column(by.group(1), result) if by else None
    if m := _TOP.search(question):
        return Intent("top", n=_number(m.group(1) or m.group(2)), column=named, descending=True)
    if m := _BOTTOM.search(question):
        return Intent("bottom", n=_number(m.group(1) or m.group(2)), column=named, descending=False)
    if m := _SORT.search(question):
        column = find_column(m.group(1), result)
        if column is not None:
            descending = True if _DESC.search(m.group(1)) else False if _ASC.search(m.group(1)) else None
            return Intent("sort", column=column, descending=descending)
    if _COMPARE.search(question):
        return Intent("compare")
    if m := _REGROUP.search(question):
        unit = (m.group(1) or {"daily": "day", "weekly": "week", "monthly": "month", "quarterly": "quarter"}.get(
            m.group(2).lower(), "year")).lower()
        return Intent("regroup", unit=unit)
    if _SHARE.search(question):
        return Intent("share", column=named)
    if m := _FILTER.search(question):
        found = find_value(m.group(1), result)
        if found is not None:
            return Intent("filter", column=found[0], value=found[1])
    if _BACK_REFERENCE.search(question) or _words(question) & ANALYSIS_WORDS:
        return Intent("other")
    return None


__all__ = ["FOLLOWUP_WORDS", "Intent", "MAX_FOLLOWUP_CHARS", "find_column", "find_value", "is_new_question", "read_followup",
           "refers_back"]
