"""Baton's memory: an append-only journal, learnings that earn their confidence, and the
contradiction gate (seed 002, "Confidence Management" to "Workspace-scale memory").

Entry points::

    store = MemoryStore("sqlite:///memory.db", authenticator=TokenAuthenticator({"tok": "acme"}))
    scope = store.open("tok")                      # the only way to a workspace
    ingest_learnings(scope, extracted, provenance=Provenance("validation", session_id=...))
    bundle = compile_bundle(scope, "revenue by region", connection_id="warehouse")
    answer.metadata["memory_lock"] = bundle.lock.to_dict()

Modules: ``journal`` (events, hash chain, erasure), ``projection`` (rebuildable registers),
``store`` (the door: writes, reads, integrity), ``record_events`` (what each operation on one
record appends), ``writer`` (dedup -> gate -> verdict),
``gate``, ``dedup``, ``confidence``, ``lifecycle`` (decay, promotion), ``transfer``
(siblings, global, artifacts), ``bundle``, ``doctrine``, ``feedback``, ``validation``.
Importing this package touches no file and opens no connection.

``__all__`` is what a user of the memory needs: the store and its door, records and events,
the entry points (learn, feed back, compile a bundle, doctrine, decay, transfer), their
results and the errors. The writer's machinery (the contradiction gate, dedup, confidence
policies, normalisers) stays in its modules (``baton.memory.gate`` ...), for its tests.
"""

from baton.memory.access import Authenticator, Principal, TokenAuthenticator, TrustedAuthenticator, WorkspaceScope
from baton.memory.bundle import Bundle, BundleLock, compile_bundle
from baton.memory.doctrine import DoctrineReport, index_doctrine
from baton.memory.errors import (
                                 ArtifactError,
                                 InvalidRecordError,
                                 JournalIntegrityError,
                                 MemoryStoreError,
                                 MemoryUnavailableError,
                                 RecordNotFoundError,
                                 StaleVersionError,
                                 WorkspaceAccessError,
)
from baton.memory.feedback import Feedback, FeedbackOutcome, record_feedback
from baton.memory.gate import Verdict
from baton.memory.journal import ChainReport, NewEvent, StoredEvent
from baton.memory.lifecycle import DecayReport, promote, run_decay
from baton.memory.model import Provenance, Record, RecordDraft, Validity
from baton.memory.store import MemoryStore, RebuildReport
from baton.memory.transfer import export_artifact, global_patterns, import_artifact, sibling_learnings
from baton.memory.validation import ValidationOutcome, ingest_learnings, record_validation
from baton.memory.writer import CandidateVerdict, WriteResult

__all__ = [
    "ArtifactError", "Authenticator", "Bundle", "BundleLock", "CandidateVerdict", "ChainReport", "DecayReport",
    "DoctrineReport", "Feedback", "FeedbackOutcome", "InvalidRecordError", "JournalIntegrityError", "MemoryStore",
    "MemoryStoreError", "MemoryUnavailableError", "NewEvent", "Principal", "Provenance", "RebuildReport", "Record",
    "RecordDraft", "RecordNotFoundError", "StaleVersionError", "StoredEvent", "TokenAuthenticator",
    "TrustedAuthenticator", "ValidationOutcome", "Validity", "Verdict", "WorkspaceAccessError", "WorkspaceScope",
    "WriteResult", "compile_bundle", "export_artifact", "global_patterns", "import_artifact", "index_doctrine",
    "ingest_learnings", "promote", "record_feedback", "record_validation", "run_decay", "sibling_learnings",
]
