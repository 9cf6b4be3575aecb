"""DuckDB files filled once per process and copied per test.

Loading MetricFlow's table snapshots through SQLAlchemy takes seconds each time (a row at a time
into DuckDB); a test that only needs the tables gets its own copy of the file, a few milliseconds,
so no test sees what another wrote.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

_built: dict[str, Path] = {}


def copy_of(key: str, fill: Callable[[Any], None], target: Path) -> str:
    """The URL of ``target``, a copy of the DuckDB file that ``fill`` (given a SQLAlchemy engine)
    filled the first time ``key`` was asked in this process."""
    import sqlalchemy as sa

    source = _built.get(key)
    if source is None:
        folder = Path(tempfile.mkdtemp(prefix="baton-test-duckdb-"))
        atexit.register(shutil.rmtree, folder, True)
        source = folder / "template.duckdb"
        engine = sa.create_engine(f"duckdb:///{source}")
        try:
            fill(engine)
        finally:
            engine.dispose()  # closed: the file is whole (checkpointed), no write-ahead log beside it
        _built[key] = source
    shutil.copy(source, target)
    return f"duckdb:///{target}"
