"""Typed failures of the memory layer.

Every one subclasses ``MemoryStoreError`` (itself a ``BatonError``) so a caller can catch the
whole family, or the one it can act on: retry after ``StaleVersionError``, refuse the
request on ``WorkspaceAccessError``, page an operator on ``JournalIntegrityError``.
"""

from __future__ import annotations

from baton.errors import BatonError


class MemoryStoreError(BatonError):
    """Base of every error raised by ``baton.memory``."""


class InvalidRecordError(MemoryStoreError, ValueError):
    """A record, event or learning was malformed (empty text, unknown kind or category,
    confidence out of range...). Nothing was written."""


class StaleVersionError(MemoryStoreError):
    """Optimistic concurrency: the stream moved on since the caller read it. Re-read and
    retry. ``expected`` is what the caller assumed, ``actual`` what the journal holds."""

    def __init__(self, stream: str, expected: int, actual: int):
        super().__init__(f"stream {stream!r} is at version {actual}, not the expected {expected}")
        self.stream = stream
        self.expected = expected
        self.actual = actual


class WorkspaceAccessError(MemoryStoreError, PermissionError):
    """The caller could not be authenticated, or used a scope this store did not issue."""


class RecordNotFoundError(MemoryStoreError, KeyError):
    """No record with that id in the caller's workspace (records of other workspaces are
    reported the same way: their existence is not disclosed)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "record not found"


class JournalIntegrityError(MemoryStoreError):
    """The hash chain or a payload hash does not verify: the journal was altered outside
    Baton. Raised by ``verify(strict=True)``; ``problems`` lists what failed."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = problems or []


class ArtifactError(MemoryStoreError, ValueError):
    """An export artifact failed its digest or format check on import. Nothing was imported."""


class MemoryUnavailableError(MemoryStoreError):
    """The memory database could not be written: locked past its busy timeout, unreachable,
    or concurrent writers kept colliding. Nothing was written; retry later."""
