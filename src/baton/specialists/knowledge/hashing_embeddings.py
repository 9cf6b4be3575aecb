"""``HashingEmbeddings``: a deterministic, offline, dependency-free embedding.

Honest label: this is a *lexical-ish* embedding, not a semantic model. Each text becomes a
bag of hashed features — whole words, crude stems and character trigrams (so "refunds",
"refunded" and "refund" land close), plus a small synonym map that folds common
business-English synonyms onto one word ("reimburse" -> "refund"). The features are hashed
into ``dimension`` buckets with a sign bit, weighted ``1 + log(tf)`` and L2-normalized.

What it is for: tests and benchmarks of the hybrid pipeline, and offline use where no model
exists. It catches inflections, typos and the listed synonyms that BM25 misses; it does not
know that "let go" means "terminate". ``version`` digests the settings and the synonym map,
so changing either is a different model as far as stored vectors are concerned.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

ALGORITHM_VERSION = "1"

# Groups of interchangeable words; every word maps to its group's first word. Written as
# generic business English, not tuned to any corpus.
DEFAULT_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("refund", "reimburse", "reimbursement", "repay", "repayment"),
    ("salary", "pay", "wage", "wages", "compensation", "payroll"),
    ("employee", "staff", "worker", "personnel", "colleague"),
    ("customer", "client", "buyer"),
    ("purchase", "buy", "procure", "procurement"),
    ("cost", "price", "expense", "spend", "spending", "fee"),
    ("begin", "start", "commence"),
    ("end", "finish", "terminate", "termination", "stop"),
    ("car", "vehicle", "automobile"),
    ("vacation", "holiday", "leave", "pto"),
    ("manager", "supervisor", "boss"),
    ("revenue", "sales", "turnover"),
    ("profit", "earnings"),
    ("repair", "fix"),
    ("defect", "bug", "fault", "error"),
    ("support", "help", "assist", "assistance"),
    ("fast", "quick", "rapid"),
    ("large", "big"),
    ("annual", "yearly"),
    ("limit", "cap", "maximum", "ceiling"),
    ("allow", "permit", "allowed", "permitted"),
    ("forbid", "prohibit", "ban", "forbidden", "prohibited"),
    ("computer", "laptop", "notebook", "pc"),
    ("phone", "mobile", "smartphone"),
    ("travel", "trip", "journey"),
    ("hotel", "lodging", "accommodation"),
    ("meal", "food", "dining"),
    ("contract", "agreement"),
    ("sick", "ill", "illness"),
    ("remote", "telework", "telecommute"),
    ("hire", "recruit", "recruiting", "onboard"),
    ("fire", "dismiss", "dismissal"),
    ("password", "passphrase", "credential"),
    ("deadline", "due"),
    ("invoice", "bill", "billing"),
    ("ship", "shipping", "deliver", "delivery"),
    ("quarter", "q1", "q2", "q3", "q4"),
    ("increase", "raise", "grow", "growth", "rise"),
    ("decrease", "drop", "decline", "fall", "reduce", "reduction"),
)

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its may me my of on or our should so than that the their them then there these
    they this to was we were what when where which who whom why will with would you your""".split()
)

_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ations", "ation", "ments", "ment", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s")


class HashingEmbeddings:
    """Deterministic hashed bag-of-features embedding (see the module docstring)."""

    name = "baton-hashing"

    def __init__(
        self,
        dimension: int = 512,
        *,
        synonyms: Iterable[Sequence[str]] | None = None,
        trigram_weight: float = 0.35,
    ) -> None:
        if dimension < 16:
            raise ValueError("dimension must be at least 16")
        self.dimension = dimension
        self.trigram_weight = trigram_weight
        groups = DEFAULT_SYNONYMS if synonyms is None else tuple(tuple(g) for g in synonyms)
        canonical: dict[str, str] = {}
        for group in groups:
            for word in group:
                canonical.setdefault(word.lower(), group[0].lower())
                canonical.setdefault(_stem(word.lower()), group[0].lower())
        self._canonical: Mapping[str, str] = canonical
        digest = hashlib.sha256(repr((dimension, trigram_weight, sorted(self._canonical.items()))).encode()).hexdigest()
        self.version = f"{ALGORITHM_VERSION}-{digest[:12]}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # hashing a batch of chunks is CPU work (~1 ms per chunk): off the event loop
        texts = list(texts)
        return await asyncio.to_thread(lambda: [self.embed_one(text).tolist() for text in texts])

    def embed_one(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        for feature, count in self._features(text).items():
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dimension
            sign = 1.0 if digest[4] & 1 else -1.0
            weight = (1.0 + math.log(count[0])) * count[1]
            vector[bucket] += sign * weight
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def _features(self, text: str) -> dict[str, list[float]]:
        features: dict[str, list[float]] = {}

        def add(feature: str, weight: float) -> None:
            entry = features.setdefault(feature, [0, weight])
            entry[0] += 1

        for word in _WORD.findall(text.lower()):
            if word in STOPWORDS or len(word) < 2:
                continue
            stem = _stem(word)
            canonical = self._canonical.get(word) or self._canonical.get(stem)
            if canonical is not None:
                word, stem = canonical, _stem(canonical)
            add("s:" + stem, 1.0)
            padded = f"#{word}#"
            if self.trigram_weight and len(padded) > 4:
                for i in range(len(padded) - 2):
                    add("t:" + padded[i : i + 3], self.trigram_weight)
        return features


def _stem(word: str) -> str:
    """A crude suffix stripper ("reimbursed", "reimburses", "reimburse" -> "reimburs")."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word
