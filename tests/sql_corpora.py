"""What the SQL corpus tests share: the fetched third-party corpora (loaded through
``scripts/fetch_test_data.py``), the skip when they are absent, and sqlglot kept quiet."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest

DIALECTS = ("sqlite", "duckdb", "postgres", "mysql")
_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "fetch_test_data.py"
_spec = importlib.util.spec_from_file_location("fetch_test_data", _SCRIPT)
corpora = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpora)

FETCH_COMMAND = ".venv/bin/python scripts/fetch_test_data.py"

needs_corpora = pytest.mark.skipif(
    not corpora.present(),
    reason=f"third-party SQL corpora not fetched: run `{FETCH_COMMAND}`",
)
needs_regress_corpus = pytest.mark.skipif(
    not corpora.regress_present(),
    reason=f"PostgreSQL regression suite not fetched: run `{FETCH_COMMAND}`",
)
# The ground-truth classifiers (sql_ground_truth*) parse with pglast, which the fetch also needs.
PGLAST_MISSING = f"pglast is not installed: `.venv/bin/pip install pglast`, then `{FETCH_COMMAND}`"


@pytest.fixture(autouse=True)
def quiet_sqlglot():
    """sqlglot warns on every statement it falls back to parsing as a Command."""
    logger = logging.getLogger("sqlglot")
    previous = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(previous)
