"""Embedding providers: any OpenAI-compatible embeddings endpoint, and a local
sentence-transformers model.

Decisions:
- ``OpenAICompatibleEmbeddings`` uses the official ``openai`` SDK (``embeddings.create``),
  so OpenAI, Azure-style gateways, Ollama, vLLM, LM Studio and llama.cpp servers all work by
  ``base_url``. The dimension must be known before the first call (it is part of the
  stored identity): it is taken from a small table of well-known models, or must be given.
  SDK failures become ``baton.errors.ProviderError`` subclasses, as for chat models.
- ``version`` defaults to ``"default"``: a hosted model name such as
  ``text-embedding-3-small`` already pins its weights. Pass ``version=`` for a server whose
  model tag can be re-pointed (``nomic-embed-text:latest``).
- ``SentenceTransformerEmbeddings`` loads only from a local directory — Baton never
  downloads weights at run time — and ``sentence-transformers`` is an optional package,
  imported when the provider is created. Its default version digests the model folder's
  configuration files and weight-file sizes, so swapping weights changes the identity.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baton.files import FileRefusedError, FolderLimits, SkipReason, read_file, walk_folder
from baton.specialists.knowledge.errors import EmbeddingConfigurationError

_CONFIG_BYTES = 5_000_000
_DIGEST_LIMITS = FolderLimits(max_file_bytes=None, max_total_bytes=None, max_files=10_000, max_depth=16,
                              excluded_dirs=frozenset())

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
}


class OpenAICompatibleEmbeddings:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

    ``request_dimensions=True`` sends ``dimensions=`` (text-embedding-3 models can shorten
    their vectors); otherwise the server's native size must equal ``dimension``.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimension: int | None = None,
        version: str = "default",
        batch_size: int = 128,
        request_dimensions: bool = False,
        timeout: float = 60.0,
        max_retries: int = 2,
        client: Any = None,
    ) -> None:
        if not model:
            raise EmbeddingConfigurationError("OpenAICompatibleEmbeddings needs a model name")
        base = model.split(":", 1)[0]
        dimension = dimension or KNOWN_DIMENSIONS.get(model) or KNOWN_DIMENSIONS.get(base)
        if not dimension:
            raise EmbeddingConfigurationError(
                f"the dimension of embedding model {model!r} is not known: pass dimension=..."
            )
        if batch_size < 1:
            raise EmbeddingConfigurationError("batch_size must be at least 1")
        self.name = model
        self.version = version
        self.dimension = int(dimension)
        self.batch_size = batch_size
        self.request_dimensions = request_dimensions
        if client is None:
            from openai import AsyncOpenAI

            # a local server (Ollama, vLLM) needs no key; the SDK insists on some string
            client = AsyncOpenAI(base_url=base_url, api_key=api_key or _env_key(base_url), timeout=timeout, max_retries=max_retries)
        self._client = client

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        from baton.llm.errors_map import map_sdk_error

        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [text if text.strip() else " " for text in texts[start : start + self.batch_size]]
            kwargs: dict[str, Any] = {"model": self.name, "input": batch, "encoding_format": "float"}
            if self.request_dimensions:
                kwargs["dimensions"] = self.dimension
            try:
                response = await self._client.embeddings.create(**kwargs)
            except Exception as exc:
                raise map_sdk_error(exc, provider="openai-embeddings", model=self.name) from exc
            items = sorted(response.data, key=lambda item: item.index)
            vectors.extend(list(item.embedding) for item in items)
        return vectors


def _env_key(base_url: str | None) -> str | None:
    from baton.settings import Settings

    key = Settings.from_env().openai_api_key
    return key if key or base_url is None else "not-needed"


class SentenceTransformerEmbeddings:
    """A sentence-transformers model loaded from a local directory (never from a hub)."""

    def __init__(
        self,
        path: str | Path,
        *,
        version: str | None = None,
        device: str | None = None,
        batch_size: int = 32,
        normalize: bool = True,
    ) -> None:
        path = Path(path)
        if not path.is_dir():
            raise EmbeddingConfigurationError(
                f"sentence-transformers model folder {str(path)!r} does not exist; Baton loads local "
                "models only (download it once, then pass its path)"
            )
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingConfigurationError(
                "SentenceTransformerEmbeddings needs the optional 'sentence-transformers' package "
                "(pip install sentence-transformers); or use OpenAICompatibleEmbeddings or "
                "HashingEmbeddings"
            ) from exc
        self._model = SentenceTransformer(str(path), device=device, local_files_only=True)
        self.name = path.resolve().name
        self.version = version or _folder_digest(path)
        self.dimension = int(self._model.get_sentence_embedding_dimension())
        self.batch_size = batch_size
        self.normalize = normalize

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        def encode() -> list[list[float]]:
            array = self._model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=self.normalize, show_progress_bar=False
            )
            return array.tolist()

        return await asyncio.to_thread(encode)


def _folder_digest(path: Path) -> str:
    """Config files' contents plus weight files' names and sizes: cheap, and changes when
    the model does. The folder is read under ``baton.files``' rules: only regular files
    inside it are opened (a FIFO named ``config.json`` cannot hang start-up); a link out of
    it counts by its target's path, never read (a Hugging Face cache snapshot links every
    file into ``../../blobs/``, named by content hash, so the identity still follows the
    weights); hidden files are left out. A plain folder digests as it did before."""
    listing = walk_folder(path, limits=_DIGEST_LIMITS)
    digest = hashlib.sha256()
    for entry in sorted(listing.files, key=lambda e: e.relative.split("/")):
        if Path(entry.relative).suffix in (".json", ".txt", ".model") and entry.size < _CONFIG_BYTES:
            try:
                raw, _ = read_file(listing.root, entry.relative, max_bytes=_CONFIG_BYTES)
            except FileRefusedError:
                continue
            digest.update(entry.relative.encode() + b"\0" + raw)
        else:
            digest.update(f"{entry.relative}\0{entry.size}".encode())
    for item in listing.skipped:
        if item.reason is SkipReason.OUTSIDE and item.target:
            digest.update(f"{item.path}\0->{item.target}".encode())
    return digest.hexdigest()[:16]
