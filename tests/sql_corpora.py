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

needs_corpora = pytest.mark.skipif(
    not corpora.present(),
    reason="third-party SQL corpora not fetched: run `.venv/bin/python scripts/fetch_test_data.py`",
)


@pytest.fixture(autouse=True)
def quiet_sqlglot():
    """sqlglot warns on every statement it falls back to parsing as a Command."""
    logger = logging.getLogger("sqlglot")
    previous = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(previous)
