"""DuckDB and SQLite files filled once per process and copied per test, and the YAML loader
their fixtures are read with.

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

import yaml

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's safe parser when present: the same documents, faster
_built: dict[str, Path] = {}


def copy_of(key: str, fill: Callable[[Any], None], target: Path, scheme: str = "duckdb") -> str:
    """The URL of ``target``, a copy of the database file (``scheme``: duckdb or sqlite) that
    ``fill`` (given a SQLAlchemy engine) filled the first time ``key`` was asked in this process."""
    import sqlalchemy as sa

    source = _built.get(f"{scheme}:{key}")
    if source is None:
        folder = Path(tempfile.mkdtemp(prefix="baton-test-db-"))
        atexit.register(shutil.rmtree, folder, True)
        source = folder / f"template.{scheme}"
        engine = sa.create_engine(f"{scheme}:///{source}")
        try:
            fill(engine)
        finally:
            engine.dispose()  # closed: the file is whole (checkpointed), no journal or write-ahead log beside it
        _built[f"{scheme}:{key}"] = source
    shutil.copy(source, target)
    return f"{scheme}:///{target}"
