"""What one model-written query may cost this process: the bounds each engine enforces.

A read-only guard stops writes, not memory bombs. ``SELECT repeat('x', 200000000),
repeat('y', 200000000)`` took this process from 61 MB to 1.2 GB before these bounds. The
budget has three parts (``ConnectionOptions``):

- ``byte_cap`` (the result): rows are read one at a time and kept while they fit
  (``execute.py``); the first row that would overflow ends the result, ``truncated``. A first
  row bigger than the whole budget is kept with its text/bytes cells cut to fit.
- ``max_row_bytes`` (one row, default 16 MB): a row above it is refused with
  ``ErrorClass.RESOURCE_LIMIT`` (not cut: it would have to be materialised here first), and
  where the engine allows, before it crosses into this process.
- Engine memory: DuckDB ``duckdb_memory_limit`` / ``duckdb_threads`` /
  ``duckdb_max_temp_directory_size``; PostgreSQL ``postgres_work_mem`` /
  ``postgres_temp_file_limit`` per statement, and ``hash_mem_multiplier`` 1 (a hash may use
  ``work_mem``, not twice it): the server's memory and disk, not ours, but a runaway sort
  should not take the database down either. What a non-superuser may ``SET`` is
  ``work_mem``, ``hash_mem_multiplier``, ``statement_timeout``; ``temp_file_limit`` needs a
  superuser or a ``GRANT SET`` (PostgreSQL 15), so ``baton db grant`` sets it on the role
  instead. String builders whose size the statement's constants tell are refused by the
  check before they run (``safety/sizes.py``): nothing on the server bounds a value while
  it is built.

Per engine, how a row is bounded before it is materialised here:

- PostgreSQL: every single SELECT/VALUES (as PostgreSQL's own parser, pglast, reads it) runs
  wrapped as ``SELECT * FROM (SELECT * FROM (<query>) LIMIT row_cap+1) AS r WHERE <guard>``;
  the guard compares ``pg_column_size(r.*)`` and, for rows whose stored size could hide a
  compressed value over the limit, ``octet_length(CAST(r.* AS text))`` with
  ``max_row_bytes`` and raises *on the server* (a cast of an explanatory text to boolean,
  SQLSTATE 22P02, marked with ``ROW_LIMIT_MARKER``) so the row never crosses the wire. Both
  functions are STABLE and the message carries the row's size, so the planner cannot fold
  the raising branch into a plan-time error. The inner ``LIMIT`` is also an optimisation
  fence: the user's select list is evaluated once per row, not once per reference. Rows are
  then streamed one at a time (libpq single-row mode, extended protocol: one command per
  statement, as the prepared statement guaranteed before). EXPLAIN and SHOW run as written:
  their output is bounded by the statement's text.
- MySQL/MariaDB: the server never builds a single value over ``max_allowed_packet`` (16 MB
  here): it returns NULL with warning 1301, which ``execute.py`` turns into a
  ``resource_limit`` error when the result has been read to the end. A row of several such
  values can still be larger, so the PyMySQL connection class below refuses any packet
  over ``max_row_bytes`` before reading its body (``CR_NET_PACKET_TOO_LARGE``, 2020), and
  closes the connection, whose stream is then mid-packet. Rows are read with an unbuffered
  cursor (``SSCursor``), one at a time.
- SQLite: ``SQLITE_LIMIT_LENGTH`` bounds every string and blob, computed or stored, inside
  SQLite itself (``SQLITE_TOOBIG``). Per statement it is ``max_row_bytes`` divided by the
  result's column count (read from a ``LIMIT 0`` probe that evaluates nothing), at least
  ``SQLITE_MIN_VALUE_BYTES``: so a row of many large values is bounded too. One exception in
  SQLite (3.40 here): ``printf()``/``format()`` return NULL, silently, when their result
  would pass the limit. A statement whose text names either runs with both replaced by
  ``sqlite_bounded_printf`` (SQLite's own printf, on a private in-memory connection, with a
  NULL for a non-NULL format turned into ``SQLITE_TOOBIG``); SQLite cannot remove an
  application function that shadows a built-in, so that connection is closed afterwards.
- DuckDB: ``memory_limit`` (default 128 MB: a bomb reaching the limit must still leave the
  process within +150 MB), ``threads``, and where it spills: ``temp_directory`` is a folder
  Baton creates for the database (``duckdb_temp_directory``, mode 0700, removed when the last
  ``SQLConnection`` on the file closes; DuckDB's default is ``<database>.tmp`` beside the
  user's file) and ``max_temp_directory_size`` bounds it (default 256 MB: an ``ORDER BY
  random()`` spilled 1.1 GB before, issue 24; over it the statement fails with DuckDB's
  out-of-memory error, a ``resource_limit``). All are in the connect config, locked by
  ``lock_configuration``. DuckDB keeps one database instance per file and process and
  refuses a second connection with another configuration, so the folder's name is derived
  from the process and the file: every ``SQLConnection`` on the file shares it. Rows are fetched one at a time from DuckDB's streaming result.
  What remains (measured in ``bench/sql_memory_bombs.py``): DuckDB evaluates up to 2048 rows
  of an expression before any row can be inspected, and a few allocations are outside its
  buffer manager (values folded from constants at plan time, ``lpad``'s temporaries, the
  text of a conversion error quoting a huge value); only an out-of-process executor would
  bound those.

What is not bounded here (measured by ``bench/sql_memory_bombs.py``, which lists them as over
its +256 MB targets): an error *message* quoting a huge value (PostgreSQL's "invalid input
syntax for type integer: "xxx..."" can be as long as the value) is read whole by libpq and
psycopg (a 100 MB value: this process +764 MB, the backend +382 MB); ``classify.py`` keeps its
first ``MAX_MESSAGE_CHARS`` so it does not travel on. And a PostgreSQL aggregate over values
whose size only the data tells (``string_agg(repeat(g::text, 1000), '')`` over 200,000 rows)
grows its backend up to PostgreSQL's own 1 GB per value (+1 GB measured) before it fails.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import sqlite3
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.errors import ConfigurationError

if TYPE_CHECKING:
    from baton.specialists.sql.connection import ConnectionOptions

SQLITE_MIN_VALUE_BYTES = 32_768
CR_NET_PACKET_TOO_LARGE = 2020  # the MySQL client library's code for the same refusal
_MEMORY_SIZE = re.compile(r"\d+\s*(kB|MB|GB|TB)?")
_DUCKDB_SIZE = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)


def validate_limits(options: ConnectionOptions) -> None:
    """Refuse limits that are not plain sizes (they end up inside SET statements)."""
    if options.max_row_bytes < 1 or options.duckdb_threads < 1:
        raise ConfigurationError("max_row_bytes and duckdb_threads must be positive")
    for name in ("duckdb_memory_limit", "duckdb_max_temp_directory_size"):
        if not _DUCKDB_SIZE.fullmatch(getattr(options, name).strip()):
            raise ConfigurationError(f"{name} {getattr(options, name)!r} is not a size such as 128MB")
    for name in ("postgres_work_mem", "postgres_temp_file_limit"):
        value = getattr(options, name)
        if value is not None and not _MEMORY_SIZE.fullmatch(value.strip()):
            raise ConfigurationError(f"{name} {value!r} is not a PostgreSQL memory size such as 32MB")


def duckdb_config(options: ConnectionOptions, temp_directory: str) -> dict[str, Any]:
    """The connect-time settings (``lock_configuration`` forbids setting them later)."""
    return {"memory_limit": options.duckdb_memory_limit.strip(), "threads": options.duckdb_threads,
            "temp_directory": temp_directory, "max_temp_directory_size": options.duckdb_max_temp_directory_size.strip()}


def postgres_statement_settings(
    options: ConnectionOptions, timeout_s: float, may_set_temp_file_limit: bool, server_version: int
) -> dict[str, str]:
    """What each guarded PostgreSQL statement runs under (``set_config(..., true)``: local to
    its transaction). ``hash_mem_multiplier`` exists from PostgreSQL 13."""
    settings = {"statement_timeout": str(max(1, int(timeout_s * 1000)))}
    if server_version >= 130000:
        settings["hash_mem_multiplier"] = "1"
    if options.postgres_work_mem:
        settings["work_mem"] = options.postgres_work_mem.strip()
    if options.postgres_temp_file_limit and may_set_temp_file_limit:
        settings["temp_file_limit"] = options.postgres_temp_file_limit.strip()
    return settings


_TEMP_LOCK = threading.Lock()
_TEMP_USERS: dict[str, int] = {}  # folder -> SQLConnections using it


def duckdb_temp_directory(database: str) -> str:
    """The folder DuckDB spills to for ``database``, created (0700, never through a link) for
    the first ``SQLConnection`` on the file; each caller must ``release_duckdb_temp_directory``."""
    digest = hashlib.sha256(str(Path(database).resolve()).encode()).hexdigest()[:16]
    folder = str(Path(tempfile.gettempdir()) / f"baton-duckdb-{os.getuid()}-{os.getpid()}-{digest}")
    with _TEMP_LOCK:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            info = os.lstat(folder)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
                raise ConfigurationError(f"DuckDB's temporary folder {folder} exists and is not this process's own") from None
        if not _TEMP_USERS and not _TEMP_CLEANUP:
            atexit.register(_remove_temp_directories)  # connections never closed: their folders go at exit
            _TEMP_CLEANUP.append(True)
        _TEMP_USERS[folder] = _TEMP_USERS.get(folder, 0) + 1
    return folder


_TEMP_CLEANUP: list[bool] = []


def _remove_temp_directories() -> None:
    with _TEMP_LOCK:
        for folder in list(_TEMP_USERS):
            shutil.rmtree(folder, ignore_errors=True)
        _TEMP_USERS.clear()


def release_duckdb_temp_directory(folder: str) -> None:
    """One user fewer; the last one removes the folder and what DuckDB left in it."""
    with _TEMP_LOCK:
        users = _TEMP_USERS.get(folder, 0) - 1
        if users > 0:
            _TEMP_USERS[folder] = users
            return
        _TEMP_USERS.pop(folder, None)
        shutil.rmtree(folder, ignore_errors=True)


def sqlite_value_limit(max_row_bytes: int, columns: int | None) -> int:
    """Per statement: no value over ``max_row_bytes / columns`` (a row of them stays bounded)."""
    if not columns:
        return SQLITE_MIN_VALUE_BYTES
    return max(SQLITE_MIN_VALUE_BYTES, max_row_bytes // columns)


def sqlite_bounded_printf(max_value_bytes: int) -> Callable[..., Any]:
    """SQLite's ``printf``, raising ``SQLITE_TOOBIG`` (through ``OverflowError``, which the
    sqlite3 module maps to it) where the built-in returns NULL for a result over the limit.
    Arguments cross Python unchanged in type (integer, real, text, blob, NULL)."""

    def printf(*args: Any) -> Any:
        helper = getattr(_PRINTF_HELPER, "connection", None)
        if helper is None:
            helper = _PRINTF_HELPER.connection = sqlite3.connect(":memory:")
        helper.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
        value = helper.execute(f"SELECT printf({', '.join('?' * len(args))})", args).fetchone()[0]
        if value is None and args and args[0] is not None:
            raise OverflowError(f"printf() result over {max_value_bytes} bytes")
        return value

    return printf


_PRINTF_HELPER = threading.local()


def row_bounded_connection(max_packet_bytes: int, *args: Any, **kwargs: Any) -> Any:
    """A PyMySQL connection that refuses, before reading it, a packet (one result row, or
    any other server message) longer than ``max_packet_bytes``."""
    return _row_bounded_class(max_packet_bytes)(*args, **kwargs)


@functools.cache
def _row_bounded_class(max_packet_bytes: int) -> type:
    """PyMySQL reads a packet in chunks of at most 16 MB, each through ``_read_bytes``, from
    ``_read_packet``: counting there refuses a long row at its first chunk over the bound,
    before the chunk is read. The stream is then mid-packet, so the connection is closed and
    its unbuffered result marked finished (nothing may try to drain it)."""
    import pymysql

    class RowBoundedConnection(pymysql.connections.Connection):
        _baton_packet = 0

        def result_in_flight(self) -> bool:
            """An unbuffered result not read to its end (or a connection already closed)."""
            return not self.open or (self._result is not None and self._result.unbuffered_active is True)

        def abandon_result(self) -> None:
            """Before the connection is closed: nothing may try to drain the result."""
            if self._result is not None:
                self._result.unbuffered_active = False

        def _read_packet(self, packet_type: Any = pymysql.connections.MysqlPacket) -> Any:
            self._baton_packet = 0
            return super()._read_packet(packet_type)

        def _read_bytes(self, num_bytes: int) -> bytes:
            self._baton_packet += num_bytes
            if self._baton_packet > max_packet_bytes + 64:  # + the 4-byte headers of the chunks
                self.abandon_result()
                self._force_close()
                raise pymysql.err.OperationalError(
                    CR_NET_PACKET_TOO_LARGE,
                    f"a row of more than {max_packet_bytes} bytes (max_row_bytes) was refused before it was read")
            return super()._read_bytes(num_bytes)

    return RowBoundedConnection
