"""The demo's documents: metric definitions, data rules and a glossary (``doctrine/``).

They serve twice, as a workspace's documents would in real life: indexed into memory as
*doctrine* (always eligible for the SQL specialists' per-task bundle, so "revenue is in
cents" reaches every query), and searchable by ``finance_docs``, a knowledge specialist that
answers "how is profit defined?" with citations (or, with no model, with the cited passages).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def doctrine_folder() -> Path:
    return Path(str(resources.files("baton.demo") / "doctrine"))
