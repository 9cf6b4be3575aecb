"""Errors of the knowledge specialist.

``EmbeddingModelMismatchError`` is the one that guards retrieval quality: vectors from two
embedding models live in different spaces, so comparing them gives plausible-looking but
meaningless similarities. Baton refuses instead of degrading silently (seed 002,
"Workspace-scale memory", rule 2).
"""

from __future__ import annotations

from baton.errors import BatonError, ConfigurationError
from baton.files import SkipReason


class KnowledgeError(BatonError):
    """Base of the knowledge specialist's errors."""


class DocumentLoadError(KnowledgeError):
    """A document could not be read or parsed (unsupported format, binary file, a PDF the
    PDF library cannot open, a file over the size limit). ``source`` names the file;
    ``reason`` is the ``baton.files.SkipReason`` when the folder rules refused it."""

    def __init__(self, message: str, *, source: str = "", reason: SkipReason | None = None):
        super().__init__(message)
        self.source = source
        self.reason = reason


class EmbeddingError(KnowledgeError):
    """An embedding provider failed or returned something unusable (wrong count of
    vectors, wrong or inconsistent dimension, NaN values)."""


class EmbeddingModelMismatchError(KnowledgeError):
    """Vectors of one embedding model were about to be compared with, or stored next to,
    vectors of another (different name, version or dimension).

    ``stored`` and ``requested`` are the two model descriptions. The fix is explicit:
    re-embed the index with the new model (``KnowledgeIndex.reembed()``) or configure the
    model the index was built with.
    """

    def __init__(self, message: str, *, stored: object = None, requested: object = None):
        super().__init__(message)
        self.stored = stored
        self.requested = requested


class EmbeddingConfigurationError(ConfigurationError, KnowledgeError):
    """An embedding provider cannot be set up (optional package not installed, model path
    missing, no model name)."""
