"""Memory records: what callers draft, what the projection holds, and how values normalize.

Every record carries the seed's five structured fields beside its text (entity, attribute,
scope, provenance, validity) plus a normalized ``value``; the contradiction gate reads only
those, never the prose. Decisions:

- **Kinds**: ``learning`` (SQL lessons), ``note`` (session notes), ``insight``,
  ``benchmark`` (a verified question -> SQL) and ``doctrine`` (a section of the operator's
  Markdown, always eligible for bundles).
- **Scope** is a "/"-separated path inside the workspace (``workspace``, ``project-A``,
  ``project-A/reports``, ``connection:sales``); ``global`` is the scope of promoted facts.
- **Times** are float seconds since the epoch (UTC) everywhere in storage: they survive
  JSON exactly, and decay is arithmetic on them. The API also accepts aware datetimes.
- **Value normalization** makes "30s", "30 sec" and "0.5 min" the same position and keeps
  "60s" different; "always"/"allowed"/"permit" normalize to ``allow``, "never"/"deny"/
  "forbidden" to ``deny``. A record without a value has the position ``None``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from baton.memory.errors import InvalidRecordError

KINDS = ("learning", "note", "insight", "benchmark", "doctrine")
STATUSES = ("active", "superseded", "deactivated", "expired", "retired")
GLOBAL_SCOPE = "global"
DEFAULT_SCOPE = "workspace"
MAX_TEXT_CHARS = 4000
# Column sizes of the projection (schema.py); connection ids also name ``analysis:<id>`` streams (200).
FIELD_LIMITS = {"entity": 300, "attribute": 300, "scope": 300, "category": 64, "connection_id": 180}


def to_epoch(value: datetime | float | int | None, default: float | None = None) -> float:
    """A datetime (aware or naive-as-UTC) or epoch number as float epoch seconds."""
    if value is None:
        if default is None:
            raise InvalidRecordError("a time is required")
        return default
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.timestamp()
    return float(value)


def normalize_text(text: str) -> str:
    """Lowercase, whitespace collapsed: what similarity and lesson hashes compare."""
    return " ".join(text.strip().lower().split())


def normalize_key(key: str | None) -> str:
    """Entity/attribute spelling: ``Customer Data_sharing`` -> ``customer-data-sharing``."""
    return re.sub(r"[\s_]+", "-", (key or "").strip().lower())


def normalize_scope(scope: str | None) -> str:
    parts = [normalize_key(p) for p in (scope or DEFAULT_SCOPE).split("/") if p.strip()]
    return "/".join(parts) or DEFAULT_SCOPE


def text_hash(text: str) -> str:
    """The lesson hash of transfer and promotion: same lesson, same hash, any connection."""
    return hashlib.sha256(normalize_text(text).encode()).hexdigest()


_POLICY_WORDS = {
    "allow": ("allow", "allowed", "permit", "permitted", "always", "allowable"),
    "deny": ("deny", "denied", "never", "forbid", "forbidden", "block", "blocked", "disallow", "disallowed"),
    "true": ("true", "yes", "on", "enabled", "enable"),
    "false": ("false", "no", "off", "disabled", "disable"),
}
_SYNONYMS = {word: canon for canon, words in _POLICY_WORDS.items() for word in words}
_DURATIONS = {
    "ms": 0.001, "msec": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}
_NUMBER_UNIT = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*([a-z%]*)$")


def _canonical_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(round(x, 9))


def normalize_value(value: Any) -> str | None:
    """The normalized position a record asserts (see the module docstring)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _canonical_number(value)
    text = " ".join(str(value).strip().lower().split()).rstrip(".!;")
    if not text:
        return None
    if text in _SYNONYMS:
        return _SYNONYMS[text]
    match = _NUMBER_UNIT.match(text.replace(",", ""))
    if match:
        number, unit = float(match.group(1)), match.group(2)
        if unit in _DURATIONS:
            return f"{_canonical_number(number * _DURATIONS[unit])} s"
        return f"{_canonical_number(number)} {unit}".strip()
    return text


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who or what asserted something, and from which evidence.

    Two assertions are *independent* when their ``key()`` differs: another session,
    another agent, another observed outcome (a query execution or feedback id), or another
    user. ``source`` (validation, feedback, llm_analysis, doctrine, import, promotion,
    manual) is descriptive and deliberately NOT part of the key: an LLM re-reading the
    same attempts is the same evidence, not a second witness.
    """

    source: str = "manual"
    session_id: str | None = None
    agent: str | None = None
    outcome_id: str | None = None
    user_id: str | None = None
    at: float | None = None

    def key(self) -> tuple[str | None, str | None, str | None, str | None]:
        return (self.session_id, self.agent, self.outcome_id, self.user_id)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Provenance:
        data = dict(data or {})
        return cls(**{k: data[k] for k in cls.__slots__ if k in data})


@dataclass(frozen=True, slots=True)
class Validity:
    """When a statement was observed, and for how long it stays true without re-checking.

    A ``volatile`` fact past ``freshness_s`` seconds after ``observed_at`` leaves default
    retrieval whatever its confidence (and even when verified)."""

    observed_at: float | None = None
    volatile: bool = False
    freshness_s: float | None = None

    def fresh_at(self, now: float) -> bool:
        if not self.volatile or self.freshness_s is None or self.observed_at is None:
            return True
        return now <= self.observed_at + self.freshness_s


@dataclass(slots=True)
class RecordDraft:
    """What a caller wants remembered; the store turns it into a ``Record``."""

    kind: str
    text: str
    entity: str = ""
    attribute: str = ""
    scope: str = DEFAULT_SCOPE
    value: Any = None
    category: str = ""
    connection_id: str | None = None
    provenance: Provenance = field(default_factory=Provenance)
    validity: Validity = field(default_factory=Validity)
    data: dict[str, Any] = field(default_factory=dict)
    verified: bool = False

    def validated(self) -> RecordDraft:
        """A normalized copy, or ``InvalidRecordError``."""
        if self.kind not in KINDS:
            raise InvalidRecordError(f"unknown record kind {self.kind!r}; expected one of {KINDS}")
        raw = str(self.text or "")
        if self.kind == "doctrine":  # Markdown: keep line structure, drop trailing spaces and blank runs
            text = re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in raw.strip().splitlines()))
        else:
            text = " ".join(raw.split())
        if not text:
            raise InvalidRecordError("a memory record needs non-empty text")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidRecordError(f"record text is {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
        entity, attribute = normalize_key(self.entity), normalize_key(self.attribute)
        if not entity or not attribute:
            raise InvalidRecordError("a memory record needs an entity and an attribute (the gate reads them)")
        scope, category = normalize_scope(self.scope), (self.category or "").strip().lower()
        connection_id = self.connection_id or None
        for name, value in (("entity", entity), ("attribute", attribute), ("scope", scope), ("category", category),
                            ("connection_id", connection_id or "")):
            if len(value) > FIELD_LIMITS[name]:  # the columns' sizes: PostgreSQL would refuse with a raw DataError
                raise InvalidRecordError(f"record {name} is {len(value)} characters; the limit is {FIELD_LIMITS[name]}")
        try:
            json.dumps(self.data)
        except (TypeError, ValueError) as exc:
            raise InvalidRecordError(f"record data must be JSON-serializable: {exc}") from None
        return RecordDraft(
            kind=self.kind, text=text, entity=entity, attribute=attribute, scope=scope,
            value=normalize_value(self.value), category=category, connection_id=connection_id, provenance=self.provenance, validity=self.validity,
            data=dict(self.data), verified=bool(self.verified),
        )


@dataclass(slots=True)
class Record:
    """One row of the record projection: the current state of a record's event stream."""

    id: str
    workspace: str
    kind: str
    text: str
    entity: str
    attribute: str
    scope: str
    value: str | None
    category: str
    connection_id: str | None
    confidence: float
    base_confidence: float
    anchor_at: float
    observed_at: float
    volatile: bool = False
    freshness_s: float | None = None
    verified: bool = False
    stale: bool = False
    status: str = "active"
    superseded_by: str | None = None
    supersedes: list[str] = field(default_factory=list)
    provenance: list[Provenance] = field(default_factory=list)
    times_applied: int = 0
    data: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    created_at: float = 0.0
    updated_at: float = 0.0
    updated_seq: int = 0

    @property
    def is_active(self) -> bool:
        return self.status == "active"

    @property
    def lesson_hash(self) -> str:
        return text_hash(self.text)

    @property
    def validity(self) -> Validity:
        return Validity(self.observed_at, self.volatile, self.freshness_s)

    @property
    def content_hash(self) -> str:
        """Hash of what the record says (not of how confident we are): the bundle lock pins
        it, and the journal sequence in the same lock pins the confidence."""
        body = [self.kind, self.text, self.entity, self.attribute, self.scope, self.value,
                self.category, self.connection_id, self.data]
        return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
