"""Classify a database error into the eight classes the validation loop reacts to.

Codes first, messages only where the engine has no code: SQLSTATE for PostgreSQL, error
numbers for MySQL/MariaDB, SQLite's extended result names (``SQLITE_READONLY``,
``SQLITE_INTERRUPT``, ...) with the message only to tell "no such table" from "no such
column" inside ``SQLITE_ERROR``, and DuckDB's exception types (it has no codes) with the
message only inside a type that covers several cases.

Retryable classes go back to the model with enriched context; ``permission_denied``,
``resource_limit`` (a row, value, result or memory bound was hit: ``limits.py``) and
``connection_error`` are fatal (the connection layer retries connection errors a few
times before they surface). A write refused by a read-only transaction or connection is
``permission_denied``: it is not something a repaired query could be allowed to do.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from baton.errors import BatonError


class ErrorClass(StrEnum):
    TABLE_NOT_FOUND = "table_not_found"
    COLUMN_NOT_FOUND = "column_not_found"
    SYNTAX_ERROR = "syntax_error"
    TIMEOUT = "timeout"
    PERMISSION_DENIED = "permission_denied"
    CONNECTION_ERROR = "connection_error"
    RESOURCE_LIMIT = "resource_limit"
    OTHER = "other"

    @property
    def retryable(self) -> bool:
        return self not in (ErrorClass.PERMISSION_DENIED, ErrorClass.CONNECTION_ERROR, ErrorClass.RESOURCE_LIMIT)


@dataclass(slots=True)
class ClassifiedError:
    error_class: ErrorClass
    message: str
    code: str | None = None  # SQLSTATE, MySQL errno, SQLite result name, DuckDB type name
    name: str | None = None  # the missing table/column when the engine names it


class SQLExecutionError(BatonError):
    """A statement failed in the database. ``error`` says how (class, code, name)."""

    def __init__(self, error: ClassifiedError) -> None:
        super().__init__(f"{error.error_class}: {error.message}")
        self.error = error

    @property
    def error_class(self) -> ErrorClass:
        return self.error.error_class


_PG = {
    "42P01": ErrorClass.TABLE_NOT_FOUND,
    "3F000": ErrorClass.TABLE_NOT_FOUND,  # invalid schema name
    "42703": ErrorClass.COLUMN_NOT_FOUND,
    "42601": ErrorClass.SYNTAX_ERROR,
    "57014": ErrorClass.TIMEOUT,
    "42501": ErrorClass.PERMISSION_DENIED,
    "25006": ErrorClass.PERMISSION_DENIED,  # read-only transaction
    "54000": ErrorClass.RESOURCE_LIMIT,  # program_limit_exceeded ("requested length too large")
}
_MYSQL = {
    1146: ErrorClass.TABLE_NOT_FOUND, 1109: ErrorClass.TABLE_NOT_FOUND, 1049: ErrorClass.TABLE_NOT_FOUND,
    1054: ErrorClass.COLUMN_NOT_FOUND,
    1064: ErrorClass.SYNTAX_ERROR, 1149: ErrorClass.SYNTAX_ERROR,
    3024: ErrorClass.TIMEOUT, 1969: ErrorClass.TIMEOUT, 1317: ErrorClass.TIMEOUT,
    1142: ErrorClass.PERMISSION_DENIED, 1143: ErrorClass.PERMISSION_DENIED, 1044: ErrorClass.PERMISSION_DENIED,
    1045: ErrorClass.PERMISSION_DENIED, 1227: ErrorClass.PERMISSION_DENIED, 1792: ErrorClass.PERMISSION_DENIED,
    1290: ErrorClass.PERMISSION_DENIED,
    1038: ErrorClass.RESOURCE_LIMIT, 1041: ErrorClass.RESOURCE_LIMIT, 1114: ErrorClass.RESOURCE_LIMIT,
    1153: ErrorClass.RESOURCE_LIMIT, 1301: ErrorClass.RESOURCE_LIMIT,
    2020: ErrorClass.RESOURCE_LIMIT,  # a packet over the client's row bound (limits.py)
    2002: ErrorClass.CONNECTION_ERROR, 2003: ErrorClass.CONNECTION_ERROR, 2006: ErrorClass.CONNECTION_ERROR,
    2013: ErrorClass.CONNECTION_ERROR, 2055: ErrorClass.CONNECTION_ERROR, 1040: ErrorClass.CONNECTION_ERROR,
}
_SQLITE = {
    "SQLITE_READONLY": ErrorClass.PERMISSION_DENIED, "SQLITE_AUTH": ErrorClass.PERMISSION_DENIED,
    "SQLITE_PERM": ErrorClass.PERMISSION_DENIED, "SQLITE_INTERRUPT": ErrorClass.TIMEOUT,
    "SQLITE_CANTOPEN": ErrorClass.CONNECTION_ERROR, "SQLITE_NOTADB": ErrorClass.CONNECTION_ERROR,
    "SQLITE_CORRUPT": ErrorClass.CONNECTION_ERROR, "SQLITE_IOERR": ErrorClass.CONNECTION_ERROR,
    "SQLITE_TOOBIG": ErrorClass.RESOURCE_LIMIT, "SQLITE_NOMEM": ErrorClass.RESOURCE_LIMIT,
}
_DUCKDB = {
    "ParserException": ErrorClass.SYNTAX_ERROR, "InterruptException": ErrorClass.TIMEOUT,
    "PermissionException": ErrorClass.PERMISSION_DENIED, "IOException": ErrorClass.CONNECTION_ERROR,
    "ConnectionException": ErrorClass.CONNECTION_ERROR, "OutOfMemoryException": ErrorClass.RESOURCE_LIMIT,
}
# PostgreSQL's row guard (limits.py) raises by casting this text to boolean: SQLSTATE 22P02
ROW_LIMIT_MARKER = "baton-row-limit"
MAX_MESSAGE_CHARS = 2000  # an error can quote a value of any size (PostgreSQL "invalid input syntax ... 'xxx...'")
_QUOTED = re.compile(r"""["'`]([^"'`]+)["'`]""")


def classify_error(exc: BaseException, dialect: str) -> ClassifiedError:
    """Map a driver (or SQLAlchemy-wrapped) exception to a ``ClassifiedError``, the way the
    dialect's engine reads its errors (``Engine.classify``)."""
    from baton.specialists.sql.engines import engine_named

    orig = getattr(exc, "orig", None) or exc
    return engine_named(dialect).classify(orig, first_line(str(orig)))


def classify_postgres(orig: BaseException, message: str) -> ClassifiedError:
    state = getattr(orig, "sqlstate", None)
    if state is None:  # no server answer at all: refused, DNS, reset
        import psycopg

        if isinstance(orig, (psycopg.OperationalError, psycopg.InterfaceError, OSError)):
            return ClassifiedError(ErrorClass.CONNECTION_ERROR, message)
        return ClassifiedError(ErrorClass.OTHER, message)
    cls = _PG.get(state)
    if state == "22P02" and ROW_LIMIT_MARKER in message:
        reason = message.split(ROW_LIMIT_MARKER, 1)[1].strip(' :"')
        return ClassifiedError(ErrorClass.RESOURCE_LIMIT, reason, "RowTooLarge")
    if cls is None:
        if state.startswith("53"):  # insufficient resources: out of memory, disk full, temp_file_limit
            cls = ErrorClass.RESOURCE_LIMIT
        elif state.startswith("08") or state.startswith("57P"):
            cls = ErrorClass.CONNECTION_ERROR
        elif state.startswith("28"):
            cls = ErrorClass.PERMISSION_DENIED
        else:
            cls = ErrorClass.OTHER
    return ClassifiedError(cls, message, state, _name(cls, message))


def classify_mysql(orig: BaseException, message: str) -> ClassifiedError:
    args: tuple[Any, ...] = getattr(orig, "args", ())
    errno = args[0] if args and isinstance(args[0], int) else None
    if errno is None:
        cls = ErrorClass.CONNECTION_ERROR if isinstance(orig, OSError) else ErrorClass.OTHER
        return ClassifiedError(cls, message)
    text = str(args[1]) if len(args) > 1 else message
    cls = _MYSQL.get(errno, ErrorClass.OTHER)
    name = _name(cls, text)
    if cls is ErrorClass.TABLE_NOT_FOUND and name and "." in name:
        name = name.rsplit(".", 1)[1]  # "Table 'db.t' doesn't exist"
    return ClassifiedError(cls, first_line(text), str(errno), name)


def classify_sqlite(orig: BaseException, message: str) -> ClassifiedError:
    code = getattr(orig, "sqlite_errorname", None)
    cls = _SQLITE.get(code or "")
    if cls is None:
        for prefix in ("SQLITE_IOERR", "SQLITE_CANTOPEN"):
            if code and code.startswith(prefix):
                cls = ErrorClass.CONNECTION_ERROR
    if cls is None:
        lowered = message.lower()
        if lowered.startswith("no such table"):
            cls = ErrorClass.TABLE_NOT_FOUND
        elif lowered.startswith("no such column"):
            cls = ErrorClass.COLUMN_NOT_FOUND
        elif "syntax error" in lowered or "incomplete input" in lowered or "unrecognized token" in lowered:
            cls = ErrorClass.SYNTAX_ERROR
        elif "not authorized" in lowered or "readonly database" in lowered:
            cls = ErrorClass.PERMISSION_DENIED
        elif isinstance(orig, sqlite3.ProgrammingError) and "one statement" in lowered:
            cls = ErrorClass.SYNTAX_ERROR
        else:
            cls = ErrorClass.OTHER
    name = None
    if cls in (ErrorClass.TABLE_NOT_FOUND, ErrorClass.COLUMN_NOT_FOUND) and ":" in message:
        name = message.split(":", 1)[1].strip()
    return ClassifiedError(cls, message, code, name)


def classify_duckdb(orig: BaseException, message: str) -> ClassifiedError:
    type_name = type(orig).__name__
    cls = _DUCKDB.get(type_name)
    lowered = message.lower()
    if cls is None:
        if type_name == "CatalogException" and ("table with name" in lowered or "schema with name" in lowered):
            cls = ErrorClass.TABLE_NOT_FOUND
        elif type_name == "BinderException" and ("column" in lowered and ("not found" in lowered or "does not have" in lowered)):
            cls = ErrorClass.COLUMN_NOT_FOUND
        elif type_name == "InvalidInputException" and "read-only" in lowered:
            cls = ErrorClass.PERMISSION_DENIED
        else:
            cls = ErrorClass.OTHER
    name = None
    if cls is ErrorClass.TABLE_NOT_FOUND:
        match = re.search(r"with name (\S+) does not exist", message)
        name = match.group(1) if match else None
    elif cls is ErrorClass.COLUMN_NOT_FOUND:
        match = re.search(r'column named "([^"]+)"', message) or _QUOTED.search(message)
        name = match.group(1) if match else None
    return ClassifiedError(cls, message, type_name, name)


def _name(cls: ErrorClass, message: str) -> str | None:
    if cls not in (ErrorClass.TABLE_NOT_FOUND, ErrorClass.COLUMN_NOT_FOUND):
        return None
    match = _QUOTED.search(message)
    return match.group(1) if match else None


def first_line(text: str) -> str:
    """The first line, at most ``MAX_MESSAGE_CHARS``: the message reaches logs and the model's prompt."""
    text = text[: MAX_MESSAGE_CHARS * 2].strip()
    line = text.splitlines()[0] if text else text
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 1] + "…"
