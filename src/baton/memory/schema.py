"""Tables of the journal and its projection, and the triggers that make the journal
append-only in the database itself (each backend's own, ``baton.store_backends``).

- ``events``: one row per event. ``seq`` is the global sequence; ``(workspace, position)``
  orders a workspace's hash chain (unique, so the chain cannot fork); ``(workspace,
  stream, version)`` is the optimistic-concurrency key. UPDATE, DELETE (and TRUNCATE on
  PostgreSQL) are refused by triggers.
- ``payloads``: event bodies, kept apart so erasure can delete content while the chain,
  which covers a salted hash of each payload, still verifies. UPDATE is refused; DELETE is
  refused unless the payload's stream already holds a ``record.forgotten`` tombstone.
- ``records``: the projection (every register readers use). Rebuildable from the two
  tables above; indexed for the gate's candidate lookup (workspace, kind, entity,
  attribute), for bundles (workspace, kind, is_active, connection_id) and for transfer and
  promotion (workspace, lesson_hash).

``prefix`` (and ``schema`` on PostgreSQL) let several stores share one database.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import BigInteger, Boolean, Column, Float, Index, Integer, MetaData, String, Table, Text, UniqueConstraint
from sqlalchemy.engine import Connection

from baton.store_backends import backend_of, serial_integer

FORGOTTEN = "record.forgotten"
_SEQ = serial_integer()  # SQLite autoincrements only INTEGER PRIMARY KEY


@dataclass(frozen=True)
class Tables:
    metadata: MetaData
    events: Table
    payloads: Table
    records: Table
    prefix: str
    schema: str | None

    def qualified(self, table: Table) -> str:
        return f'"{self.schema}"."{table.name}"' if self.schema else f'"{table.name}"'


def build_tables(prefix: str = "baton_mem_", schema: str | None = None) -> Tables:
    md = MetaData(schema=schema)
    events = Table(
        f"{prefix}events", md,
        Column("seq", _SEQ, primary_key=True, autoincrement=True),
        Column("event_id", String(32), nullable=False, unique=True),
        Column("workspace", String(200), nullable=False),
        Column("position", BigInteger, nullable=False),
        Column("stream", String(200), nullable=False),
        Column("version", Integer, nullable=False),
        Column("type", String(64), nullable=False),
        Column("payload_hash", String(64), nullable=False),
        Column("provenance", Text, nullable=False),
        Column("recorded_at", Float, nullable=False),
        Column("prev_hash", String(64), nullable=False),
        Column("hash", String(64), nullable=False),
        UniqueConstraint("workspace", "position", name=f"{prefix}uq_chain"),
        UniqueConstraint("workspace", "stream", "version", name=f"{prefix}uq_stream_version"),
        Index(f"{prefix}ix_events_type", "workspace", "type"),
    )
    payloads = Table(
        f"{prefix}payloads", md,
        Column("event_id", String(32), primary_key=True),
        Column("workspace", String(200), nullable=False),
        Column("stream", String(200), nullable=False),
        Column("salt", String(32), nullable=False),
        Column("body", Text, nullable=False),
        Index(f"{prefix}ix_payloads_stream", "workspace", "stream"),
    )
    records = Table(
        f"{prefix}records", md,
        Column("id", String(32), primary_key=True),
        Column("workspace", String(200), nullable=False),
        Column("kind", String(16), nullable=False),
        Column("status", String(16), nullable=False),
        Column("is_active", Boolean, nullable=False),
        Column("category", String(64), nullable=False),
        Column("connection_id", String(200)),
        Column("entity", String(300), nullable=False),
        Column("attribute", String(300), nullable=False),
        Column("scope", String(300), nullable=False),
        Column("value", Text),
        Column("text", Text, nullable=False),
        Column("lesson_hash", String(64), nullable=False),
        Column("confidence", Float, nullable=False),
        Column("base_confidence", Float, nullable=False),
        Column("anchor_at", Float, nullable=False),
        Column("observed_at", Float, nullable=False),
        Column("volatile", Boolean, nullable=False),
        Column("freshness_s", Float),
        Column("verified", Boolean, nullable=False),
        Column("stale", Boolean, nullable=False),
        Column("superseded_by", String(32)),
        Column("supersedes", Text, nullable=False),
        Column("provenance", Text, nullable=False),
        Column("times_applied", Integer, nullable=False),
        Column("data", Text, nullable=False),
        Column("version", Integer, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("updated_at", Float, nullable=False),
        Column("updated_seq", BigInteger, nullable=False),
        Index(f"{prefix}ix_rec_subject", "workspace", "kind", "entity", "attribute"),
        Index(f"{prefix}ix_rec_active", "workspace", "kind", "is_active", "connection_id", "confidence"),
        Index(f"{prefix}ix_rec_lesson", "workspace", "lesson_hash"),
        Index(f"{prefix}ix_rec_anchor", "workspace", "is_active", "anchor_at"),
    )
    return Tables(md, events, payloads, records, prefix, schema)


def install(conn: Connection, tables: Tables) -> None:
    """Create the tables (if missing) and the append-only triggers. On PostgreSQL this takes
    a transaction-scoped advisory lock first, so processes starting together against one
    database install once (concurrent ``CREATE`` of the same table or trigger fails)."""
    backend = backend_of(conn)
    backend.transaction_lock(conn, "baton-mem-install:" + tables.prefix)
    tables.metadata.create_all(conn)
    backend.install_journal_guards(conn, tables, FORGOTTEN)  # baton.store_backends: each backend's triggers
