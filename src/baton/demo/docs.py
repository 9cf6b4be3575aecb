"""The demo's documents: metric definitions, data rules and a glossary (``doctrine/``).

They serve twice, as a workspace's documents would in real life: indexed into memory as
*doctrine* (always eligible for the SQL specialists' per-task bundle, so "revenue is in
cents" reaches every query), and searchable by ``finance_docs``, a knowledge specialist that
answers "how is profit defined?" with citations (or, with no model, with the cited passages).
"""

from __future__ import annotations

import contextlib
import sqlite3
from importlib import resources
from pathlib import Path

from baton.phrasing import Vocabulary


def doctrine_folder() -> Path:
    return Path(str(resources.files("baton.demo") / "doctrine"))


def demo_vocabulary(database: str | Path) -> Vocabulary:
    """How the demo reads questions: the names in its data (business units, products,
    cities, cost categories; ``Vocabulary.from_schema``) and the "Also called" lines of its
    documents (``Vocabulary.from_markdown``)."""
    names: dict[str, list[str]] = {}
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        for label, sql in (("business_units", "SELECT name FROM business_units"), ("products", "SELECT name FROM products"),
                           ("city", "SELECT DISTINCT city FROM roadshow_events"),
                           ("cost category", "SELECT DISTINCT category FROM monthly_costs")):
            names[label] = [row[0] for row in db.execute(sql)]
    texts = [path.read_text(encoding="utf-8") for path in sorted(doctrine_folder().glob("*.md"))]
    return Vocabulary.from_schema(names).merged(Vocabulary.from_markdown(texts))
