"""The semantic layer's error: kept apart so the model (``model.py``) and the expression
checks it runs (``expressions.py``) both raise it without importing each other both ways."""

from __future__ import annotations

from baton.errors import BatonError


class SemanticModelError(BatonError):
    """A semantic model that cannot be used: malformed YAML, an unknown reference, an
    expression outside the allowed subset, a join cycle, a name used twice."""


__all__ = ["SemanticModelError"]
