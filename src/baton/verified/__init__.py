"""Verified questions: questions a person checked, answered with their checked SQL and no
model when a new question asks the same thing.

- ``question``: the records (``VerifiedQuestion``, ``Slot``, ``SlotError``);
- ``sql``: what a verified question's SQL says about it, and binding slot values into it;
- ``shared``: the one set of a workspace's verified questions (``VerifiedSet``), read by
  every part that answers from it;
- ``matching``: when a new question asks the same thing (``find_verified``), on normalised
  words (``baton.phrasing``).

Importing this package imports no SQL parser (sqlglot loads on first use).
"""

from baton.verified.matching import (
                                     MEASURE_VERBS,
                                     Match,
                                     closest_verified,
                                     content_words,
                                     examples_by_agent,
                                     find_verified,
                                     match_verified,
                                     same_question,
                                     with_vocabulary,
)
from baton.verified.question import MAX_CHOICES, MAX_LIMIT, SLOT_KINDS, Slot, SlotError, VerifiedQuestion
from baton.verified.shared import VerifiedSet
from baton.verified.sql import bind, check_slots, sql_terms

__all__ = [
    "MAX_CHOICES", "MAX_LIMIT", "MEASURE_VERBS", "Match", "SLOT_KINDS", "Slot", "SlotError", "VerifiedQuestion", "VerifiedSet", "bind", "check_slots",
    "closest_verified", "content_words", "examples_by_agent", "find_verified", "match_verified", "same_question",
    "sql_terms", "with_vocabulary",
]
