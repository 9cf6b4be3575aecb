"""MetricFlow's integration cases asked on DuckDB once per process (``itest_cases.outcomes``).

``test_metricflow_itest`` asks all 266 cases and the focused modules (``test_mf_*``) ask their
own clusters of the same cases again: each case, as written, is asked once on one pair of copies
of the itest database (both only read), and its outcome kept for whichever test asks next.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from itest_cases import duckdb_copies, outcomes

_answered: dict[str, tuple[str, str]] = {}  # the case as JSON -> (kind, detail)


@functools.cache
def _copies() -> tuple[str, str]:
    folder = Path(tempfile.mkdtemp(prefix="baton-test-itest-"))
    atexit.register(shutil.rmtree, folder, True)
    return duckdb_copies(folder)


def _key(case: dict[str, Any]) -> str:
    return json.dumps(case, sort_keys=True, default=str)


def duckdb_outcomes(cases: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(name, kind, detail) of each case on DuckDB, as ``outcomes`` gives them; a case already
    asked in this process (the same in every field) is not asked again."""
    todo = list({_key(case): case for case in cases if _key(case) not in _answered}.values())
    if todo:
        url, check_url = _copies()
        for case, (_, kind, detail) in zip(todo, outcomes(url, check_url, todo, "duckdb"), strict=True):
            _answered[_key(case)] = (kind, detail)
    return [(case["name"], *_answered[_key(case)]) for case in cases]
