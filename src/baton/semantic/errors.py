"""The semantic layer's errors: kept apart so the model (``model.py``) and the expression
checks it runs (``expressions.py``) both raise it without importing each other both ways."""

from __future__ import annotations

from baton.errors import BatonError


class SemanticModelError(BatonError):
    """A semantic model that cannot be used: malformed YAML, an unknown reference, an
    expression outside the allowed subset, a join cycle, a name used twice."""


class SemanticQueryError(SemanticModelError):
    """A semantic query the model cannot answer (an unknown metric, a dimension that cannot
    break a metric down, a grain finer than the data), said in words a person can act on.
    Here (``query.py`` names it too) so that what a query is made of (``timegroup.py``) raises it."""


__all__ = ["SemanticModelError", "SemanticQueryError"]
