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

Each copy is a *generation* (its directory and connection). Requests ``lease()`` the
current one, so ``refresh()`` and ``close()`` never pull a copy from under a running
request: ``refresh()`` makes the next lease build a new copy and ``close()`` refuses new
leases (``FrameStoreClosedError``); either way the old copy is deleted when its last lease
ends. A copy that fails to build leaves no directory behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.errors import ConfigurationError
from baton.specialists.sql.connection import ConnectionOptions, SQLConnection

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}\Z")
_READERS = {".csv": "read_csv_auto", ".tsv": "read_csv_auto", ".parquet": "read_parquet", ".json": "read_json_auto"}


class FrameStoreClosedError(ConfigurationError):
    """The store was closed: it serves no new requests (the ones running finish)."""


@dataclass(eq=False)
class _Generation:
    """One materialised copy, with the number of requests using it."""

    connection: SQLConnection
    directory: Path
    users: int = 0
    retired: bool = False

    def close(self) -> None:
        self.connection.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class FrameStore:
    """Holds the sources (name -> DataFrame or file path) and the read-only copy."""

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
        self._current: _Generation | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def connection(self) -> SQLConnection:
        """The current copy's read-only connection, building it on first use (sync: call it
        from a worker thread in async code). Unleased: ``close()``/``refresh()`` may close
        it at any time; requests use ``lease()``."""
        with self._lock:
            return self._current_locked().connection

    @contextlib.asynccontextmanager
    async def lease(self) -> AsyncIterator[SQLConnection]:
        """The current copy's connection, kept open until the block ends whatever
        ``refresh()`` or ``close()`` do meanwhile. Raises ``FrameStoreClosedError``."""
        generation = await asyncio.to_thread(self._acquire)
        try:
            yield generation.connection
        finally:
            if self._release(generation):
                await asyncio.to_thread(generation.close)

    def refresh(self) -> None:
        """Re-read the sources on the next lease; requests running now finish on the old copy."""
        with self._lock:
            stale = self._retire_current()
        if stale is not None:
            stale.close()

    def close(self) -> None:
        """Serve no new requests; the copy is deleted once the running ones finish."""
        with self._lock:
            self._closed = True
            stale = self._retire_current()
        if stale is not None:
            stale.close()

    # --- generations (all under self._lock) --------------------------------------------

    def _current_locked(self) -> _Generation:
        if self._closed:
            raise FrameStoreClosedError(f"frame store {self.id} is closed")
        if self._current is None:
            self._current = self._build()
        return self._current

    def _acquire(self) -> _Generation:
        with self._lock:
            generation = self._current_locked()
            generation.users += 1
            return generation

    def _release(self, generation: _Generation) -> bool:
        """Drop one user; True when the caller must now close the generation."""
        with self._lock:
            generation.users -= 1
            return generation.retired and generation.users == 0

    def _retire_current(self) -> _Generation | None:
        """Detach the current copy; return it if nobody uses it (the caller closes it)."""
        generation, self._current = self._current, None
        if generation is None:
            return None
        generation.retired = True
        return generation if generation.users == 0 else None

    def _build(self) -> _Generation:
        directory = Path(tempfile.mkdtemp(prefix="baton-frames-"))
        try:
            path = directory / "frames.duckdb"
            self._materialise(path)
            return _Generation(SQLConnection(f"duckdb:///{path}", id=self.id, options=self.options), directory)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise

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
