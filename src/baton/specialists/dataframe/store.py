"""``FrameStore``: named DataFrames and files, queryable as DuckDB tables, read-only.

Decision: the operator's frames are *materialised* into a private DuckDB file (in a temp
directory), which is then opened through a normal read-only ``SQLConnection``: DuckDB
``read_only``, ``enable_external_access=false``, ``lock_configuration``. Views over the
live DataFrames in an in-memory database would avoid the copy, but an in-memory DuckDB
cannot be read-only and its views need file access left on (a CSV view reads the file at
query time), which is exactly what model-written SQL must not have. With the copy, the
model's SQL meets the same two walls as any database: the parser check (``read_csv``,
``COPY``, path-like table names refused) and an engine that can neither write nor open a
file. Files are read once, by us, from paths the operator gave, never from a model.
The copy costs one pass over the data at first use; ``refresh()`` rebuilds it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any, Mapping

from baton.errors import ConfigurationError
from baton.specialists.sql.engines import ConnectionOptions, SQLConnection

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_READERS = {".csv": "read_csv_auto", ".tsv": "read_csv_auto", ".parquet": "read_parquet", ".json": "read_json_auto"}


class FrameStore:
    """Holds the sources (name -> DataFrame or file path) and the read-only connection."""

    def __init__(self, frames: Mapping[str, Any], *, options: ConnectionOptions | None = None, id: str | None = None) -> None:
        if not frames:
            raise ConfigurationError("FrameStore needs at least one DataFrame or file")
        for name, source in frames.items():
            if not _NAME.match(name):
                raise ConfigurationError(f"frame name {name!r} is not a plain identifier (letters, digits, _)")
            if not hasattr(source, "columns") and Path(str(source)).suffix.lower() not in _READERS:
                raise ConfigurationError(f"frame {name!r}: expected a DataFrame or a .csv/.tsv/.parquet/.json path")
        self.frames = dict(frames)
        self.options = options or ConnectionOptions()
        self.id = id or f"frames-{uuid.uuid4().hex[:8]}"
        self._lock = threading.Lock()
        self._dir: Path | None = None
        self._connection: SQLConnection | None = None

    def connection(self) -> SQLConnection:
        """The read-only connection, building the DuckDB file on first use (sync: call it
        from a worker thread in async code, as ``DataFrameAgent`` does)."""
        with self._lock:
            if self._connection is None:
                self._dir = Path(tempfile.mkdtemp(prefix="baton-frames-"))
                path = self._dir / "frames.duckdb"
                self._materialise(path)
                self._connection = SQLConnection(f"duckdb:///{path}", id=self.id, options=self.options)
            return self._connection

    def _materialise(self, path: Path) -> None:
        import duckdb

        con = duckdb.connect(str(path))
        try:
            for name, source in self.frames.items():
                quoted = '"' + name + '"'
                if hasattr(source, "columns"):
                    con.register("__baton_source", source)
                    con.execute(f"CREATE TABLE {quoted} AS SELECT * FROM __baton_source")
                    con.unregister("__baton_source")
                else:
                    file = Path(str(source))
                    if not file.is_file():
                        raise ConfigurationError(f"frame {name!r}: no such file {file}")
                    reader = _READERS[file.suffix.lower()]
                    con.execute(f"CREATE TABLE {quoted} AS SELECT * FROM {reader}(?)", [str(file)])
        finally:
            con.close()

    def refresh(self) -> None:
        """Drop the copy; the next query rebuilds it from the sources."""
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
