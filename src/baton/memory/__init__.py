"""Baton's memory: an append-only journal, learnings that earn their confidence, and the
contradiction gate (seed 002, "Confidence Management" to "Workspace-scale memory").

Entry points::

    store = MemoryStore("sqlite:///memory.db", authenticator=TokenAuthenticator({"tok": "acme"}))
    scope = store.open("tok")                      # the only way to a workspace
    ingest_learnings(scope, extracted, provenance=Provenance("validation", session_id=...))
    bundle = compile_bundle(scope, "revenue by region", connection_id="warehouse")
    answer.metadata["memory_lock"] = bundle.lock.to_dict()

Modules: ``journal`` (events, hash chain, erasure), ``projection`` (rebuildable registers),
``store`` (the door: writes, reads, integrity), ``writer`` (dedup -> gate -> verdict),
``gate``, ``dedup``, ``confidence``, ``lifecycle`` (decay, promotion), ``transfer``
(siblings, global, artifacts), ``bundle``, ``doctrine``, ``feedback``, ``validation``.
Importing this package touches no file and opens no connection.
"""

from baton.memory.access import Authenticator, Principal, TokenAuthenticator, TrustedAuthenticator, WorkspaceScope
from baton.memory.bundle import Bundle, BundleLock, compile_bundle
from baton.memory.confidence import POLICIES, ConfidencePolicy
from baton.memory.dedup import Candidate, find_candidates, similarity
from baton.memory.doctrine import DoctrineReport, index_doctrine
from baton.memory.errors import (ArtifactError, InvalidRecordError, JournalIntegrityError, MemoryStoreError,
                                 MemoryUnavailableError,
                                 RecordNotFoundError, StaleVersionError, WorkspaceAccessError)
from baton.memory.feedback import Feedback, FeedbackOutcome, record_feedback
from baton.memory.gate import Action, Verdict, apply_verdict, contradiction_gate, independent, keyword_flags, scopes_overlap
from baton.memory.journal import ChainReport, NewEvent, StoredEvent
from baton.memory.lifecycle import DecayReport, promote, run_decay
from baton.memory.model import Provenance, Record, RecordDraft, Validity, normalize_value
from baton.memory.store import MemoryStore, RebuildReport
from baton.memory.transfer import export_artifact, global_patterns, import_artifact, sibling_learnings
from baton.memory.validation import (LearningLike, ValidationOutcome, ingest_learnings, learning_draft,
                                     record_validation)
from baton.memory.writer import CandidateVerdict, WriteResult

__all__ = [
    "Action", "ArtifactError", "Authenticator", "Bundle", "BundleLock", "Candidate", "CandidateVerdict", "ChainReport",
    "ConfidencePolicy", "DecayReport", "DoctrineReport", "Feedback", "FeedbackOutcome", "InvalidRecordError",
    "JournalIntegrityError", "LearningLike", "MemoryStore", "MemoryStoreError", "MemoryUnavailableError", "NewEvent", "POLICIES", "Principal",
    "Provenance", "RebuildReport", "Record", "RecordDraft", "RecordNotFoundError", "StaleVersionError", "StoredEvent",
    "TokenAuthenticator", "TrustedAuthenticator", "ValidationOutcome", "Validity", "Verdict", "WorkspaceAccessError",
    "WorkspaceScope", "WriteResult", "apply_verdict", "compile_bundle", "contradiction_gate", "export_artifact",
    "find_candidates", "global_patterns", "import_artifact", "independent", "index_doctrine", "ingest_learnings",
    "keyword_flags", "learning_draft", "normalize_value", "promote", "record_feedback", "record_validation",
    "run_decay", "scopes_overlap", "sibling_learnings", "similarity",
]
